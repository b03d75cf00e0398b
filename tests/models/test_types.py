"""Column types and id parsing shared by the models."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from models.types import MAX_ROW_ID, UTCDateTime, parse_row_id


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", 1),
        (str(MAX_ROW_ID), MAX_ROW_ID),
        (str(MAX_ROW_ID + 1), None),
        ("0", None),
        ("-1", None),
        ("12 ", None),
        ("٣", None),  # a digit, but not an ASCII one
        ("1e3", None),
        ("9" * 40, None),
        (None, None),
        (7, None),
    ],
)
def test_row_ids_from_outside(raw: object, expected: int | None) -> None:
    assert parse_row_id(raw) == expected


def test_timestamps_are_utc_and_naive_ones_are_refused() -> None:
    column = UTCDateTime()
    with pytest.raises(ValueError, match="naive datetime"):
        column.process_bind_param(datetime(2026, 1, 1), None)
    stored = column.process_result_value(datetime(2026, 1, 1, 12), None)
    assert stored == datetime(2026, 1, 1, 12, tzinfo=UTC)
