"""Braintree's answers read: a decimal amount as minor units (or none when it is not a
whole number of them), our reference as echoed, validation codes however deep."""

from __future__ import annotations

import pytest

from providers.braintree.answers import error_codes, transaction_report


@pytest.mark.parametrize(
    ("amount", "minor"),
    [("14.00", 1400), ("0.01", 1), ("10.001", None), ("ten", None), (None, None)],
)
def test_an_amount_is_read_as_minor_units_or_not_at_all(amount: object, minor: int | None) -> None:
    report = transaction_report({"amount": amount, "currency_iso_code": "EUR", "order_id": "k"})
    assert (report.amount_minor, report.reference) == (minor, "k")


def test_every_code_is_found_however_deep() -> None:
    errors = {
        "errors": [{"code": "81502"}],
        "transaction": {"errors": [{"code": "91565"}], "credit_card": {"errors": [{"code": "x"}]}},
    }
    assert error_codes(errors) == {"81502", "91565", "x"}
    assert error_codes(None) == set()
