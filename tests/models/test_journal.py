"""The chart of accounts as addresses: built from typed values, never parsed from text."""

from __future__ import annotations

import re

import pytest

from models import ACCOUNT_PATTERN, Account


def test_every_builder_makes_an_address_the_database_admits() -> None:
    built = [
        Account.REVENUE,
        Account.REFUNDS,
        Account.DISPUTES,
        Account.wallet(12),
        Account.clearing("stripe"),
        Account.fees("braintree"),
        Account.bank("stripe"),
    ]
    assert built[3:] == ["wallet:12", "clearing:stripe", "fees:braintree", "bank:stripe"]
    assert all(re.match(ACCOUNT_PATTERN, address) for address in built)


@pytest.mark.parametrize(
    ("build", "value"),
    [(Account.wallet, 0), (Account.clearing, "Stripe"), (Account.fees, ""), (Account.bank, "a:b")],
)
def test_a_value_outside_the_chart_is_refused(build: object, value: object) -> None:
    with pytest.raises(ValueError, match="not an account"):
        build(value)  # type: ignore[operator]  # each builder takes its one value
