"""What every provider's webhooks share: strict JSON, typed fields, timestamps within the
tolerance."""

from __future__ import annotations

import pytest

from providers.events import (
    MAX_JSON_DEPTH,
    SIGNATURE_TOLERANCE_S,
    JSONNumberError,
    JSONTextError,
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


CONTROL, SURROGATE = "a JSON string holds the control character U+", "lone surrogate"


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
    with pytest.raises(ValueError, match=refusal) as refused:
        strict_json(body)
    # Text that cannot be stored is its own kind of refusal: not "not JSON".
    assert isinstance(refused.value, JSONTextError) == (refusal != "nested deeper")


@pytest.mark.parametrize(
    "body", ["1e400", "-1e400", '{"a": [NaN]}', "Infinity", "9" * 31, "-" + "9" * 31]
)
def test_numbers_no_field_can_hold_are_out_of_range_not_malformed(body: str) -> None:
    with pytest.raises(JSONNumberError):
        strict_json(body)


@pytest.mark.parametrize(
    ("body", "value"),
    [("5.0", 5), ("5e2", 500), ("-0.0", 0), ("5.5", 5.5), ("1e300", 1e300), ("[2.0]", [2])],
)
def test_integral_numbers_are_integers_where_json_schema_counts_them_so(
    body: str, value: object
) -> None:
    parsed = strict_json(body, is_integral_float_int=True)
    assert parsed == value and type(parsed) is type(value)
    assert type(strict_json(body)) is not int  # a webhook's numbers stay as written


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
