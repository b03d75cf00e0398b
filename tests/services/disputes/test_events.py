"""Disputes as Stripe tells them, end to end: the sandbox's dispute test cards, its
events delivered to our endpoint (signed, recorded, applied by the jobs), and Stripe's
SDK deciding the dispute as an operator answering in Stripe's Dashboard would."""

from __future__ import annotations

import json
from typing import Any

import stripe
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, update

from extensions import db
from models import (
    Dispute,
    DisputeStatus,
    EmailKind,
    LedgerEntry,
    Order,
    OrderStatus,
    OutboxMessage,
    Payment,
    ProcessedWebhook,
    Source,
    SourceKind,
    Wallet,
    WebhookState,
)
from services.books import journal
from services.notifications.rendering import rendered_message
from services.wallet import ledger
from services.wallet.audit import audit_wallets
from tests.helpers import (
    charged,
    committed_payment,
    committed_topup,
    got,
    rows,
    run_maintenance_jobs,
    sandbox_events,
    signed_post,
)

KINDS = ("created", "funds_withdrawn", "updated", "closed", "funds_reinstated")


def _deliver(client: FlaskClient, sandbox: Any, *kinds: str, seen: set[str]) -> None:
    """POST the sandbox's dispute events of these kinds not delivered yet, in that order."""
    for kind in kinds:
        for event in sandbox_events(sandbox, f"charge.dispute.{kind}"):
            if event["id"] not in seen:
                seen.add(event["id"])
                assert signed_post(client, event).status_code == 200


def _dispute(app: Flask) -> tuple[Dispute, OrderStatus | None, int | None]:
    """The one dispute, its order's status, its top-up wallet's balance."""
    with app.app_context():
        dispute = db.session.scalars(select(Dispute)).one()
        payment = db.session.get(Payment, dispute.payment_id)
        assert payment is not None
        order = db.session.get(Order, payment.order_id) if payment.order_id else None
        wallet = db.session.get(Wallet, payment.wallet_id) if payment.wallet_id else None
        db.session.expunge(dispute)
        return dispute, order.status if order else None, wallet.balance_minor if wallet else None


def _dispute_id(sdk: stripe.StripeClient, app: Flask, payment_id: int) -> str:
    with app.app_context():
        found_payment = db.session.get(Payment, payment_id)
        assert found_payment is not None and found_payment.provider_payment_id is not None
        intent = found_payment.provider_payment_id
    [found] = sdk.v1.disputes.list(params={"payment_intent": intent}).data
    return str(found.id)


def _decide(sdk: stripe.StripeClient, dispute_id: str, evidence: str) -> None:
    sdk.v1.disputes.update(dispute_id, params={"evidence": {"uncategorized_text": evidence}})


def test_a_chargeback_lost_leaves_the_order_disputed_and_tells_the_admins_once(
    app: Flask, client: FlaskClient, sandbox: Any, sdk: stripe.StripeClient
) -> None:
    payment_id = charged(app, committed_payment(app, payment_method="pm_card_createDispute"))
    seen: set[str] = set()
    _deliver(client, sandbox, "created", "funds_withdrawn", seen=seen)
    [again] = sandbox_events(sandbox, "charge.dispute.created")
    signed_post(client, again)  # a redelivery: recorded once
    run_maintenance_jobs(app)
    dispute, order, _ = _dispute(app)
    assert (dispute.status, dispute.reason, dispute.amount_minor) == (
        DisputeStatus.NEEDS_RESPONSE,
        "fraudulent",
        1000,
    )
    assert dispute.payment_id == payment_id and dispute.evidence_due_by is not None
    assert dispute.is_effect_applied and order == OrderStatus.DISPUTED
    _decide(sdk, dispute.provider_dispute_id, "losing_evidence")
    _deliver(client, sandbox, *KINDS, seen=seen)
    run_maintenance_jobs(app)
    dispute, order, _ = _dispute(app)
    assert dispute.status == DisputeStatus.LOST and order == OrderStatus.DISPUTED
    with app.app_context():
        alerts = db.session.scalars(
            select(OutboxMessage).where(OutboxMessage.kind == EmailKind.DISPUTE_ALERT)
        ).all()
        assert [a.subject_id for a in alerts] == [dispute.id]
        assert alerts[0].recipient == app.config["ADMIN_ALERT_EMAIL"]
        shown = rendered_message(alerts[0].id)
        assert shown is not None and "Evidence is due by" in shown.text
        assert f"/admin/payment/{payment_id}" in shown.text and "order" in shown.text
    assert rows(app, Dispute) == 1
    with app.app_context():
        assert audit_wallets().mismatches == []  # a disputed order was paid once


def test_a_chargeback_won_gives_back_exactly_what_it_took_from_a_spent_top_up(
    app: Flask, client: FlaskClient, sandbox: Any, sdk: stripe.StripeClient
) -> None:
    payment_id = committed_topup(app, 700)
    with app.app_context():
        got(Payment, payment_id).payment_method = "pm_card_createDispute"
        db.session.commit()
    charged(app, payment_id)
    with app.app_context():
        wallet_id = got(Payment, payment_id).wallet_id
        wallet = db.session.get(Wallet, wallet_id)
        assert wallet is not None and wallet.balance_minor == 700
        ledger.debit(wallet, 500, "spent-before-the-chargeback")
    seen: set[str] = set()
    _deliver(client, sandbox, "created", "funds_withdrawn", seen=seen)
    run_maintenance_jobs(app)
    dispute, _, balance = _dispute(app)
    assert (dispute.withdrawn_minor, balance) == (200, 0)  # only what was left
    _decide(sdk, _dispute_id(sdk, app, payment_id), "winning_evidence")
    _deliver(client, sandbox, *KINDS, seen=seen)
    run_maintenance_jobs(app)
    dispute, _, balance = _dispute(app)
    assert dispute.status == DisputeStatus.WON and not dispute.is_effect_applied
    assert balance == 200  # the 200 it took, not the 700 the bank reinstated to the shop
    with app.app_context():
        moved = db.session.scalars(
            select(LedgerEntry.amount_minor)
            .where(
                LedgerEntry.source_kind == SourceKind.DISPUTE, LedgerEntry.source_id == dispute.id
            )
            .order_by(LedgerEntry.id)
        ).all()
    assert moved == [-200, 200]
    with app.app_context():
        assert audit_wallets().mismatches == []
        # The audit notices a dispute whose postings do not say what it claims.
        db.session.execute(
            update(Dispute).where(Dispute.id == dispute.id).values(is_effect_applied=True)
        )
        problems = audit_wallets().mismatches
    assert problems == [f"dispute {dispute.id} is won but its funds are withdrawn"]


def test_events_in_any_order_end_where_the_newest_says(
    app: Flask, client: FlaskClient, sandbox: Any, sdk: stripe.StripeClient
) -> None:
    payment_id = charged(app, committed_payment(app, payment_method="pm_card_createDispute"))
    _decide(sdk, _dispute_id(sdk, app, payment_id), "winning_evidence")
    seen: set[str] = set()
    # The newest first: closed (won) and reinstated, then the older ones.
    _deliver(client, sandbox, "funds_reinstated", "closed", "updated", "created", seen=seen)
    _deliver(client, sandbox, "funds_withdrawn", seen=seen)
    run_maintenance_jobs(app)
    dispute, order, _ = _dispute(app)
    assert dispute.status == DisputeStatus.WON and order == OrderStatus.PAID
    assert not dispute.is_effect_applied
    with app.app_context():
        states = set(db.session.scalars(select(ProcessedWebhook.state)))
    assert states == {WebhookState.APPLIED}


def test_an_inquiry_moves_no_money_and_closes(
    app: Flask, client: FlaskClient, sandbox: Any, sdk: stripe.StripeClient
) -> None:
    payment_id = charged(app, committed_payment(app, payment_method="pm_card_createDisputeInquiry"))
    seen: set[str] = set()
    _deliver(client, sandbox, "created", seen=seen)
    run_maintenance_jobs(app)
    dispute, order, _ = _dispute(app)
    assert dispute.status == DisputeStatus.WARNING_NEEDS_RESPONSE and order == OrderStatus.PAID
    _decide(sdk, _dispute_id(sdk, app, payment_id), "winning_evidence")
    _deliver(client, sandbox, *KINDS, seen=seen)
    run_maintenance_jobs(app)
    dispute, order, _ = _dispute(app)
    assert dispute.status == DisputeStatus.WARNING_CLOSED and order == OrderStatus.PAID


def test_an_inquiry_closed_lost_moves_no_money_and_the_books_agree_with_the_provider(
    app: Flask, client: FlaskClient, sandbox: Any, sdk: stripe.StripeClient
) -> None:
    """Closing an inquiry "lost" withdraws nothing at Stripe (its balance has no
    transaction for it): the order stays paid and nothing is posted (the chaos drill's
    reconciliation found this: it used to be withdrawn like a lost chargeback)."""
    payment_id = charged(app, committed_payment(app, payment_method="pm_card_createDisputeInquiry"))
    provider_dispute = _dispute_id(sdk, app, payment_id)
    sdk.v1.disputes.close(provider_dispute)
    _deliver(client, sandbox, *KINDS, seen=set())
    run_maintenance_jobs(app)
    dispute, order, _ = _dispute(app)
    assert (dispute.status, dispute.is_inquiry, order) == (
        DisputeStatus.LOST,
        True,
        OrderStatus.PAID,
    )
    assert not dispute.is_effect_applied
    assert sdk.v1.disputes.retrieve(provider_dispute).balance_transactions == []
    with app.app_context():
        assert journal.entries_of(Source(SourceKind.DISPUTE, dispute.id)) == {}
        assert audit_wallets().mismatches == []


def test_an_inquiry_escalated_to_a_chargeback_withdraws_its_money_then(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    """The bank escalates: the same dispute, now a chargeback (Stripe's case_type)."""
    charged(app, committed_payment(app, payment_method="pm_card_createDisputeInquiry"))
    [created] = sandbox_events(sandbox, "charge.dispute.created")
    signed_post(client, created)
    run_maintenance_jobs(app)
    escalated = json.loads(json.dumps(created))
    escalated["id"] = f"{created['id']}_escalated"
    dispute_object = escalated["data"]["object"]
    dispute_object["payment_method_details"]["card"]["case_type"] = "chargeback"
    dispute_object["status"] = "needs_response"
    escalated["type"] = "charge.dispute.funds_withdrawn"
    signed_post(client, escalated)
    run_maintenance_jobs(app)
    dispute, order, _ = _dispute(app)
    assert (dispute.status, dispute.is_inquiry, order) == (
        DisputeStatus.NEEDS_RESPONSE,
        False,
        OrderStatus.DISPUTED,
    )
    assert dispute.is_effect_applied


def test_a_dispute_that_cannot_be_of_the_payment_is_rejected_and_moves_nothing(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    charged(app, committed_payment(app, payment_method="pm_card_createDispute"))
    [event] = sandbox_events(sandbox, "charge.dispute.created")
    event["data"]["object"]["amount"] = 99_999  # more than was charged
    signed_post(client, event)
    run_maintenance_jobs(app)
    assert rows(app, Dispute) == 0
    with app.app_context():
        record = db.session.scalars(select(ProcessedWebhook)).one()
        assert record.state == WebhookState.REJECTED and "cannot be of payment" in record.note
        assert db.session.scalars(select(Order.status)).one() == OrderStatus.PAID


def test_a_later_event_that_contradicts_the_dispute_sends_it_to_review(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    charged(app, committed_payment(app, payment_method="pm_card_createDispute"))
    seen: set[str] = set()
    _deliver(client, sandbox, "created", seen=seen)
    [withdrawn] = sandbox_events(sandbox, "charge.dispute.funds_withdrawn")
    withdrawn["data"]["object"]["currency"] = "usd"
    signed_post(client, withdrawn)
    run_maintenance_jobs(app)
    dispute, order, _ = _dispute(app)
    assert dispute.status == DisputeStatus.NEEDS_REVIEW and order == OrderStatus.DISPUTED
