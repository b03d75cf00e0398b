"""End to end with Braintree: payments charged through the sandbox's Braintree gateway, its
signed notifications delivered over HTTP to the app's webhook endpoint and applied: a sale
settled, a settlement declined later (the order's money taken back, as a dispute lost),
a chargeback opened; a forged notification refused and nothing recorded."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from flask import Flask
from sqlalchemy import func, select

from extensions import db
from models import (
    Dispute,
    EmailKind,
    Order,
    OrderStatus,
    OutboxMessage,
    Payment,
    PaymentStatus,
    ProcessedWebhook,
)
from sandbox.braintree.notifications import signed_form
from sandbox.braintree.xml import render
from tests.helpers import charged_order
from tests.sandbox_support import applied_webhooks, braintree_gateway


def test_settled_declined_and_disputed_sales_reach_the_shop(wired: tuple[Flask, Any]) -> None:
    app, sandbox = wired
    settles = charged_order(app, 1234, "braintree")
    declines = charged_order(
        app, 400_100, "braintree"
    )  # 4001.00: Braintree's sandbox declines its settlement
    with app.app_context():
        payments = {p.id: p for p in db.session.scalars(select(Payment))}
        assert {p.status for p in payments.values()} == {PaymentStatus.SUCCEEDED}
        settled_txn = payments[settles].provider_payment_id
    assert sandbox.age_braintree(60) == 2  # the settlement batch runs
    applied = applied_webhooks(app, lambda found: len(found) == 2)
    assert applied == ["transaction_settled", "transaction_settlement_declined"]

    disputed = sandbox.braintree_dispute(settled_txn)
    applied = applied_webhooks(app, lambda found: "dispute_opened" in found)
    assert "dispute_opened" in applied
    with app.app_context():
        by_payment = {d.payment_id: d for d in db.session.scalars(select(Dispute))}
        declined = by_payment[declines]
        assert (declined.reason, declined.status.value, declined.amount_minor) == (
            "settlement_declined",
            "lost",
            400_100,
        )
        # the operator is told of both, as of every dispute
        alerted = db.session.scalars(
            select(OutboxMessage.subject_id).where(OutboxMessage.kind == EmailKind.DISPUTE_ALERT)
        ).all()
        assert sorted(alerted) == sorted(d.id for d in by_payment.values())
        assert by_payment[settles].status.value == "needs_response"
        assert by_payment[settles].amount_minor == 1234
        fought = by_payment[settles].id
        orders = {
            o.id: o.status
            for o in db.session.scalars(select(Order))
            if o.id in {p.order_id for p in payments.values()}
        }
        # the declined sale's money never came, the chargeback's is withdrawn: both disputed
        assert set(orders.values()) == {OrderStatus.DISPUTED}

    # The shop fights the chargeback with evidence, in Braintree's Control Panel: won.
    gateway = braintree_gateway(sandbox.url)
    assert gateway.dispute.add_text_evidence(disputed["id"], "compelling_evidence").is_success
    assert gateway.dispute.finalize(disputed["id"]).is_success
    applied_webhooks(app, lambda found: "dispute_won" in found)
    with app.app_context():
        won = db.session.get(Dispute, fought)
        assert won is not None and won.status.value == "won"
        order = db.session.get(Order, payments[settles].order_id)
        assert order is not None and order.status == OrderStatus.PAID  # the money came back


def test_a_chargeback_accepted_is_lost(wired: tuple[Flask, Any]) -> None:
    app, sandbox = wired
    payment_id = charged_order(app, 2500, "braintree")
    sandbox.age_braintree(60)
    with app.app_context():
        sale = db.session.get(Payment, payment_id)
        assert sale is not None and sale.provider_payment_id is not None
        sale_id = sale.provider_payment_id
    disputed = sandbox.braintree_dispute(sale_id)
    applied_webhooks(app, lambda found: "dispute_opened" in found)
    assert braintree_gateway(sandbox.url).dispute.accept(disputed["id"]).is_success
    applied = applied_webhooks(app, lambda found: "dispute_accepted" in found)
    assert "dispute_accepted" in applied
    with app.app_context():
        lost = db.session.scalars(select(Dispute)).one()
        assert (lost.status.value, lost.amount_minor) == ("lost", 2500)


def test_a_forged_notification_is_refused_and_recorded_nowhere(wired: tuple[Flask, Any]) -> None:
    app, _ = wired
    xml = render(
        "notification",
        {
            "timestamp": datetime.now(UTC),
            "kind": "transaction_settled",
            "subject": {"transaction": {"id": "txn-x", "type": "sale", "amount": "1.00"}},
        },
    )
    for private in ("someone_elses_key", ""):
        body = urlencode(signed_form("sandbox_public_key", private, xml))
        response = app.test_client().post(
            "/webhooks/braintree", data=body, content_type="application/x-www-form-urlencoded"
        )
        assert response.status_code == 400, response.text
        assert response.get_json()["error"]["code"] == "invalid_webhook"
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(ProcessedWebhook)) == 0
