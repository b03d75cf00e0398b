"""A charge the provider settled in another currency (a proxy rewrites the sandbox's USD
record as Stripe's EUR settlement of it): matched at the provider's rate and converted
through fx:stripe, the day reconciling balance against balance; a rate the amounts do
not bear out stays a named currency_differs that books nothing."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from flask import Flask

from models import Account, DayStatus, ItemOutcome
from models.types import utcnow
from providers.outcomes import BalanceTxn
from services.statements import conversions, reconcile
from tests.books_support import LISTING, booked, named, rewriting
from tests.fault_proxy import REWRITE, FaultProxy
from tests.helpers import charge_payment, committed_payment


def _settled_in_euros(proxy: FaultProxy, rate: str, amount: int) -> None:
    """The sandbox's USD charge, as Stripe lists an EUR account's settlement of it."""

    def settle(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for txn in data:
            if txn["type"] == "charge":
                txn.update(currency="eur", amount=amount, fee=40, net=amount - 40)
                txn["exchange_rate"] = float(rate)
        return data

    def held(body: bytes) -> bytes:
        balance = json.loads(body)
        balance["pending"] = [{"amount": amount - 40, "currency": "eur", "source_types": {}}]
        balance["available"] = []
        return json.dumps(balance).encode()

    proxy.add(REWRITE, LISTING, rewrite=rewriting(settle), times=None)
    proxy.add(REWRITE, r"/v1/balance$", rewrite=held, times=None)


def _usd_charge(app: Flask) -> None:
    payment_id = committed_payment(app, currency="USD")
    with app.app_context():
        charge_payment(payment_id)


def test_a_charge_settled_in_another_currency_is_converted_at_the_providers_rate(
    proxied: tuple[Flask, FaultProxy],
) -> None:
    app, proxy = proxied
    _usd_charge(app)
    _settled_in_euros(proxy, "0.92", 920)
    with app.app_context():
        result = reconcile.reconcile("stripe", utcnow().date())
        assert result.status == DayStatus.RECONCILED, [i.detail for i in result.items]
        [charge] = result.items
        assert "$10.00 settled as €9.20 at 0.92" in charge.detail
    books = booked(app)
    assert books[(Account.clearing("stripe"), "USD")] == 0  # the dollars converted
    assert books[(Account.clearing("stripe"), "EUR")] == 920 - 40
    assert (books[(Account.fx("stripe"), "USD")], books[(Account.fx("stripe"), "EUR")]) == (
        1000,
        -920,
    )
    assert books[(Account.fees("stripe"), "EUR")] == 40
    with app.app_context():  # read again: converted once
        reconcile.reconcile("stripe", utcnow().date())
    assert booked(app)[(Account.fx("stripe"), "EUR")] == -920


def test_a_rate_the_amounts_do_not_bear_out_books_nothing(
    proxied: tuple[Flask, FaultProxy],
) -> None:
    app, proxy = proxied
    _usd_charge(app)
    _settled_in_euros(proxy, "0.92", 880)  # 0.92 of $10.00 is €9.20, not €8.80
    [differs] = named(app, utcnow().date(), ItemOutcome.CURRENCY_DIFFERS)
    assert "theirs in EUR at 0.92" in differs.detail and "ours at the rate: €9.20" in differs.detail
    assert (Account.fx("stripe"), "EUR") not in booked(app)


@pytest.mark.parametrize(
    ("amount", "currency", "rate", "settled"),
    [(1000, "USD", "0.92", 920), (1000, "JPY", "0.0061", 610), (999, "EUR", "1.0851", 1084)],
)
def test_the_rate_applies_to_major_units_and_rounds_to_the_settled_unit(
    amount: int, currency: str, rate: str, settled: int
) -> None:
    txn = BalanceTxn(
        "t",
        "charge",
        "charge",
        "ch",
        None,
        settled,
        0,
        "EUR" if currency != "EUR" else "USD",
        None,
        exchange_rate=Decimal(rate),
    )
    assert conversions.at_rate(txn, amount, currency) == settled
    assert conversions.agrees(txn, amount, currency)
    assert not conversions.agrees(txn, amount + 100, currency)
