"""Outcomes: which count against the breaker, and reports built from untrusted JSON."""

from __future__ import annotations

import pytest

from providers.outcomes import (
    Absent,
    Declined,
    NotSent,
    Report,
    Succeeded,
    Unknown,
    is_provider_failure,
)


@pytest.mark.parametrize(
    ("outcome", "is_failure"),
    [
        (Succeeded("pi_1"), False),
        (Declined("card_declined"), False),
        (Absent("no such payment"), False),
        (NotSent("connect refused"), True),
        (NotSent("circuit open", is_provider_failure=False), False),
        (Unknown("read timeout"), True),
        (Unknown("processing", is_provider_failure=False), False),
    ],
)
def test_what_counts_against_the_breaker(outcome: object, is_failure: bool) -> None:
    assert is_provider_failure(outcome) is is_failure  # type: ignore[arg-type]  # every outcome type, one parameter


def test_a_report_keeps_only_values_of_the_right_type() -> None:
    assert Report.of(True, ["EUR"], 42, {"k": 1}, 1.5) == Report()
    assert Report.of(10, "eur", "7", "ref", 10) == Report(10, "EUR", "7", "ref", 10)
