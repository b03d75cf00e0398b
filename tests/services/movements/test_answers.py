"""The one answer check, shown on a payment and a refund: each field that contradicts
the row is named; a success that does not say enough is a mismatch; a failure is
checked only on what it says."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest

from providers.outcomes import Report
from services.movements.answers import mismatch

KEY = uuid.UUID("12345678-1234-1234-1234-123456789abc")


@dataclass
class Row:
    id: int = 7
    idempotency_key: uuid.UUID = KEY
    amount_minor: int = 1250
    currency: str = "EUR"


GOOD = Report(amount_minor=1250, currency="EUR", our_id="7")


@pytest.mark.parametrize("noun", ["payment", "refund"])
def test_a_matching_answer_passes(noun: str) -> None:
    assert mismatch(noun, Row(), None, "pi_1", GOOD, is_success=True) is None
    # Named by the provider's id we hold, with no reference of ours (a Dashboard refund).
    known = Report(amount_minor=1250, currency="EUR")
    assert mismatch(noun, Row(), "pi_1", "pi_1", known, is_success=True) is None
    keyed = Report(amount_minor=1250, currency="EUR", reference=str(Row().idempotency_key))
    assert mismatch(noun, Row(), None, None, keyed, is_success=True) is None


def _said(**fields: object) -> Report:
    """A success's report: the good one with `fields` changed."""
    return Report(**{"amount_minor": 1250, "currency": "EUR", "our_id": "7", **fields})  # type: ignore[arg-type]  # fields of mixed types, as a provider sends them


CONTRADICTIONS = [
    (_said(amount_minor=1205), None, None, "amount €12.05, ours is €12.50"),
    (_said(currency="USD"), None, None, "currency 'USD', ours is 'EUR'"),
    (_said(our_id="8"), None, None, "_id '8', ours is '7'"),
    (_said(our_id=None, reference="other"), None, None, "reference 'other'"),
    (GOOD, "pi_1", "pi_2", "'pi_2', ours is 'pi_1'"),
    (_said(received_minor=1000), None, None, "amount received €10.00"),
    (_said(amount_minor=None), None, None, "no amount"),
    (_said(currency=None), None, None, "no currency"),
    (_said(our_id=None), None, "pi_new", "nothing in it names this"),
]


@pytest.mark.parametrize(("report", "held", "theirs", "expected"), CONTRADICTIONS)
def test_each_contradiction_of_a_success_is_named(
    report: Report, held: str | None, theirs: str | None, expected: str
) -> None:
    for noun in ("payment", "refund"):
        found = mismatch(noun, Row(), held, theirs, report, is_success=True)
        assert found is not None and expected in found, found


def test_a_failure_is_checked_on_what_it_says() -> None:
    silent = Report()
    assert mismatch("payment", Row(), None, "pi_1", silent, is_success=False) is None
    wrong = Report(amount_minor=99)
    found = mismatch("payment", Row(), None, "pi_1", wrong, is_success=False)
    assert found is not None and "amount" in found


def test_every_contradiction_is_said_whole_in_one_line() -> None:
    report = Report(
        amount_minor=1205,
        received_minor=1000,
        currency="USD",
        our_id="8" * 50,
        reference="r" * 50,
    )
    found = mismatch("refund", Row(), "re_1", "re_2", report, is_success=True)
    assert found == "; ".join(
        [
            "provider refund 're_2', ours is 're_1'",
            "amount $12.05, ours is €12.50",
            "amount received $10.00, ours is €12.50",
            "currency 'USD', ours is 'EUR'",
            f"refund_id {'8' * 40!r}, ours is '7'",
            f"reference {'r' * 40!r}, ours is '{KEY}'",
        ]
    )


def test_an_unknown_currency_shows_amounts_in_ours_and_case_counts() -> None:
    odd = _said(amount_minor=1205, currency="XYZ")
    assert mismatch("payment", Row(), None, None, odd, is_success=True) == (
        "amount €12.05, ours is €12.50; currency 'XYZ', ours is 'EUR'"
    )
    lower = _said(currency="eur")
    assert mismatch("payment", Row(), None, None, lower, is_success=True) == (
        "currency 'eur', ours is 'EUR'"
    )


def test_a_success_that_says_nothing_is_every_missing_fact() -> None:
    assert mismatch("payment", Row(), "pi_1", "pi_2", Report(), is_success=True) == (
        "provider payment 'pi_2', ours is 'pi_1'; no amount; no currency; "
        "nothing in it names this payment (no reference of ours, new id)"
    )
    assert mismatch("payment", Row(), None, "pi_2", Report(), is_success=False) is None
