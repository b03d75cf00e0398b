"""What every provider's webhooks share: typed fields, timestamps within the tolerance."""

from __future__ import annotations

import pytest

from providers.events import (
    SIGNATURE_TOLERANCE_S,
    WebhookError,
    check_timestamp,
    event_time,
    load_json_object,
    required_field,
)


@pytest.mark.parametrize(
    ("body", "message"),
    [(b"not json", "not JSON"), (b"[1, 2]", "not a JSON object"), (b"\xff\xfe", "not JSON")],
)
def test_only_json_objects_are_events(body: bytes, message: str) -> None:
    with pytest.raises(WebhookError, match=message):
        load_json_object(body)


@pytest.mark.parametrize("value", [None, True, "7", 7.5])
def test_a_required_field_must_have_its_type(value: object) -> None:
    with pytest.raises(WebhookError, match=r"missing or malformed field data\.created"):
        required_field({"created": value}, "created", int, "data.")
    assert required_field({"created": 7}, "created", int, "") == 7


def test_timestamps_outside_the_tolerance_are_refused() -> None:
    now = 1_800_000_000.0
    assert check_timestamp(str(int(now) - SIGNATURE_TOLERANCE_S), now) == now - 300
    for raw in (str(int(now) - SIGNATURE_TOLERANCE_S - 1), str(int(now) + 301)):
        with pytest.raises(WebhookError, match="outside the tolerance"):
            check_timestamp(raw, now)
    with pytest.raises(WebhookError, match="malformed"):
        check_timestamp("soon", now)


def test_an_impossible_created_time_is_refused() -> None:
    with pytest.raises(WebhookError, match="malformed field created"):
        event_time(10**20)
