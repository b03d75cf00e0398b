"""What every provider's webhooks share: strict JSON, typed fields, timestamps within the
tolerance."""

from __future__ import annotations

import pytest

from providers.events import (
    MAX_JSON_DEPTH,
    SIGNATURE_TOLERANCE_S,
    WebhookError,
    check_timestamp,
    event_time,
    load_json_object,
    required_field,
    strict_json,
)


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


CONTROL, SURROGATE = "a JSON string holds a control character", "lone surrogate"


@pytest.mark.parametrize(
    ("body", "refusal"),
    [
        ('{"a": {"b": ["x", "y\\u0000"]}}', CONTROL),  # deep in a list
        ('{"a\\u001f": 1}', CONTROL),  # in a key
        ('"\\u000b"', CONTROL),  # the whole value a string
        ('{"k": 1, "\\udfff": 2}', SURROGATE),
        ('["ok", ["\\ud800"]]', SURROGATE),
        ('["\\ud800", "\\udc00"]', SURROGATE),  # two strings do not make a pair
        ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), "nested deeper"),
        ('{"a": ' * MAX_JSON_DEPTH + "{}" + "}" * MAX_JSON_DEPTH, "nested deeper"),
    ],
)
def test_strict_json_refuses_what_cannot_be_stored(body: str, refusal: str) -> None:
    with pytest.raises(ValueError, match=refusal):
        strict_json(body)


@pytest.mark.parametrize(
    ("body", "value"),
    [
        ('{"a": "\\ud83d\\ude00 \\t\\n\\r \\u007f"}', {"a": "\U0001f600 \t\n\r \x7f"}),
        ("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, _nested(MAX_JSON_DEPTH)),
        ("5", 5),
        ('"text"', "text"),
        ('{"n": null, "t": true, "f": 1.5}', {"n": None, "t": True, "f": 1.5}),
    ],
)
def test_strict_json_passes_text_a_pair_makes_and_depth_within_the_limit(
    body: str, value: object
) -> None:
    assert strict_json(body) == value


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
