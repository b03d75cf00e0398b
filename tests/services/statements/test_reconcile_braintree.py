"""The books reconciled against Braintree, through its sandbox over HTTP: sales, a whole
refund made as a void, a part refunded after settlement, a settlement declined and a
chargeback won all match our entries; Braintree's fees come from its fee report; a sale
made outside the shop and a report we cannot read are named, and move nothing."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from extensions import db
from models import (
    Account,
    DayStatus,
    ItemOutcome,
    JournalEntry,
    Payment,
    Refund,
    RefundStatus,
)
from models.types import utcnow
from services.books import journal
from services.refunds.issue import refund_payment
from services.statements import reconcile
from tests.helpers import charged_order, send_refund
from tests.sandbox_support import applied_webhooks, braintree_gateway


def _charged(app: Flask, price_minor: int) -> Payment:
    payment_id = charged_order(app, price_minor, "braintree")
    with app.app_context():
        found = db.session.get(Payment, payment_id)
        assert found is not None and found.provider_payment_id
        db.session.expunge(found)
        return found


def _refunded(app: Flask, payment_id: int, amount_minor: int) -> None:
    with app.app_context():
        refund, _ = refund_payment(payment_id, amount_minor, "goodwill", "test", uuid.uuid4())
        send_refund(refund.id)
        assert db.session.get(Refund, refund.id).status == RefundStatus.SUCCEEDED  # type: ignore[union-attr]


def _outcomes(result: reconcile.DayResult) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for item in result.items:
        found.setdefault(item.outcome.value, []).append(item.detail)
    return found


def test_a_braintree_day_matches_every_movement_and_books_the_reported_fees(
    wired: tuple[Flask, Any],
) -> None:
    app, sandbox = wired
    kept = _charged(app, 1000)
    voided = _charged(app, 2000)
    _charged(app, 400_100)  # 4001.00: Braintree's sandbox declines its settlement
    disputed = _charged(app, 1234)
    _refunded(app, voided.id, 2000)  # not settled yet: Braintree voids the sale
    assert sandbox.age_braintree(60) == 4  # the settlement batch runs
    _refunded(app, kept.id, 250)  # settled: a credit of its own
    case = sandbox.braintree_dispute(disputed.provider_payment_id)
    gateway = braintree_gateway(sandbox.url)
    assert gateway.dispute.add_text_evidence(case["id"], "compelling_evidence").is_success
    assert gateway.dispute.finalize(case["id"]).is_success
    sandbox.age_braintree(60)  # the credit settles
    applied_webhooks(
        app, lambda got: {"transaction_settlement_declined", "dispute_won"} <= set(got)
    )

    with app.app_context():
        result = reconcile.reconcile("braintree", utcnow().date())
        outcomes = _outcomes(result)
        assert set(outcomes) == {"matched", "booked"}, outcomes
        assert result.status == DayStatus.RECONCILED
        # 3 charges, the void and the credit, the chargeback and its reversal (the sale
        # whose settlement was declined moved nothing at Braintree, and our success and
        # its reversal net to nothing); fees for the 2 sales that settled and the credit
        assert len(outcomes["matched"]) == 7
        assert len(outcomes["booked"]) == 3
        fees = (19 + 30) + (23 + 30) - 5  # 1.9% + 0.30 a sale; 1.9% of 2.50 back
        balances = journal.balances()
        assert balances[(Account.fees("braintree"), "EUR")] == fees
        assert balances[(Account.clearing("braintree"), "EUR")] == 1000 + 1234 - 250 - fees
        assert journal.trial_balance() == {"EUR": 0}
        entries = len(db.session.scalars(select(JournalEntry)).all())
        again = reconcile.reconcile("braintree", utcnow().date())
        assert _outcomes(again) == outcomes  # read again: the same, nothing posted twice
        assert len(db.session.scalars(select(JournalEntry)).all()) == entries


def test_a_sale_made_outside_the_shop_is_named_and_moves_nothing_but_its_fee(
    wired: tuple[Flask, Any],
) -> None:
    app, sandbox = wired
    _charged(app, 1000)
    outside = braintree_gateway(sandbox.url).transaction.sale(
        {
            "amount": "7.00",
            "payment_method_nonce": "fake-valid-nonce",
            "options": {"submit_for_settlement": True},
        }
    )
    assert outside.is_success
    sandbox.age_braintree(60)
    with app.app_context():
        result = reconcile.reconcile("braintree", utcnow().date())
        assert result.status == DayStatus.UNRECONCILED
        missing = [i for i in result.items if i.outcome == ItemOutcome.MISSING_AT_OURS]
        assert [i.detail for i in missing] == [
            f"charge {outside.transaction.id} ({outside.transaction.id}): no movement of ours"
        ]
        balances = journal.balances()
        # Braintree's fee of it is Braintree's to say (it left our balance); the sale is not
        assert balances[(Account.fees("braintree"), "EUR")] == (19 + 30) + (13 + 30)
        assert balances[(Account.clearing("braintree"), "EUR")] == 1000 - (19 + 30) - (13 + 30)


def test_a_fee_report_braintree_cannot_give_now_stores_nothing(
    wired: tuple[Flask, Any],
) -> None:
    app, sandbox = wired
    _charged(app, 1000)
    sandbox.age_braintree(60)
    sandbox.add_fault("error", dialect="braintree", endpoint="report", status=500, count=20)
    with app.app_context():
        with pytest.raises(reconcile.provider_balance.BalanceUnreadable):
            reconcile.reconcile("braintree", utcnow().date())
        assert not reconcile.is_reconciled("braintree", utcnow().date())
        assert (Account.fees("braintree"), "EUR") not in journal.balances()
