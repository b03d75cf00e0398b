"""End to end with Braintree: payments charged through the sandbox's Braintree gateway, its
signed notifications delivered over HTTP to the app's webhook endpoint and applied: a sale
settled, a settlement declined later (the charge failed: its success and what it booked
reversed, never a dispute), a chargeback opened; a forged notification refused and nothing
recorded."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from flask import Flask
from sqlalchemy import func, select

from extensions import db
from models import (
    Account,
    Dispute,
    EmailKind,
    Order,
    OrderStatus,
    OutboxMessage,
    Payment,
    PaymentStatus,
    Posting,
    ProcessedWebhook,
    SourceKind,
)
from models.journal import JournalEntry
from sandbox.braintree.notifications import signed_form
from sandbox.braintree.xml import render
from tests.helpers import charged_order
from tests.sandbox_support import applied_webhooks, braintree_gateway


def _net_by_account(payment_id: int) -> dict[str, int]:
    """What the payment's entries left in each account (its success and any reversal)."""
    rows = db.session.execute(
        select(Posting.account, func.sum(Posting.amount_minor))
        .join(JournalEntry, JournalEntry.id == Posting.entry_id)
        .where(JournalEntry.source_kind == SourceKind.PAYMENT, JournalEntry.source_id == payment_id)
        .group_by(Posting.account)
    )
    return {account: int(total) for account, total in rows}


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
        # The declined settlement is the charge's failure, never a dispute: its success is
        # taken back, and what it booked is reversed exactly (nothing is lost).
        assert declines not in by_payment
        declined = db.session.get(Payment, declines)
        assert declined is not None and declined.status == PaymentStatus.FAILED
        assert _net_by_account(declines) == {Account.clearing("braintree"): 0, Account.REVENUE: 0}
        assert declined.is_effect_applied is False
        # the operator is told of the chargeback, as of every dispute
        alerted = db.session.scalars(
            select(OutboxMessage.subject_id).where(OutboxMessage.kind == EmailKind.DISPUTE_ALERT)
        ).all()
        assert sorted(alerted) == sorted(d.id for d in by_payment.values())
        assert by_payment[settles].status.value == "needs_response"
        assert by_payment[settles].amount_minor == 1234
        fought = by_payment[settles].id
        orders = {
            p.id: db.session.get(Order, p.order_id).status  # type: ignore[union-attr]
            for p in payments.values()
        }
        # the chargeback's money is withdrawn; the declined sale's order is open again
        assert orders == {settles: OrderStatus.DISPUTED, declines: OrderStatus.OPEN}

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


def test_a_settlement_declined_after_a_lost_answer_fails_the_payment_and_books_no_loss(
    wired: tuple[Flask, Any], make_app: Any
) -> None:
    """The sale's answer was lost (a reset through the fault proxy); the search finds it
    settlement declined, and Braintree's notification says so too: the payment failed,
    no dispute, and the journal has nothing of it (once, a dispute lost booked 4,001.50
    that was never received)."""
    from services.movements import engine
    from services.payments.kind import CHARGE
    from services.webhooks.events import retry_pending_events
    from tests.factories import make_customer, make_order, make_payment
    from tests.fault_proxy import RESET, fault_proxy

    app, sandbox = wired
    with fault_proxy(sandbox.url) as proxy:
        proxy.add(RESET, r"/transactions$", method="POST")
        cut = make_app(BRAINTREE_API_BASE=proxy.url)
        with cut.app_context():
            sale = make_payment(make_order(make_customer(), price_minor=400_150), "braintree")
            db.session.commit()
            payment_id = sale.id
            engine.send(CHARGE, payment_id)
            assert db.session.get(Payment, payment_id).status == PaymentStatus.UNKNOWN  # type: ignore[union-attr]
    assert sandbox.age_braintree(60) == 1  # settlement declined (4001.50), and notified
    with app.app_context():
        engine.look_up(CHARGE, payment_id)  # found by the search, declined: failed
    applied_webhooks(app, lambda found: "transaction_settlement_declined" in found)
    with app.app_context():
        retry_pending_events()  # a notification that came before the lookup: again
        db.session.expire_all()
        failed = db.session.get(Payment, payment_id)
        assert failed is not None and failed.status == PaymentStatus.FAILED
        assert db.session.scalar(select(func.count()).select_from(Dispute)) == 0
        assert _net_by_account(payment_id) == {}  # nothing booked: nothing was received
        order = db.session.get(Order, failed.order_id)
        assert order is not None and order.status == OrderStatus.OPEN
