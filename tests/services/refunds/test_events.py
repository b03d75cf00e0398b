"""Refund events: applied like payment events, before our own answer, once however often
they come, in any order; one that does not match the refund goes to review."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import requests
from flask import Flask
from flask.testing import FlaskClient

from extensions import db
from models import (
    EmailKind,
    Order,
    OrderStatus,
    OutboxMessage,
    Payment,
    ProcessedWebhook,
    Refund,
    RefundStatus,
    Wallet,
)
from services.refunds.issue import refund_payment
from tests.helpers import (
    charged,
    committed_payment,
    got,
    rows,
    run_maintenance_jobs,
    sandbox_events,
    sandbox_refunds,
    send_refund,
    signed_post,
)

AUTH = {"Authorization": "Bearer sk_test_sandbox"}


def _refund_state(app: Flask, refund_id: int) -> tuple[RefundStatus, OrderStatus | None]:
    with app.app_context():
        refund = db.session.get(Refund, refund_id)
        assert refund is not None
        order = db.session.get(Order, refund.order_id) if refund.order_id else None
        return refund.status, order.status if order else None


def _lost_answer(app: Flask, sandbox: Any, amount: int | None = None) -> int:
    """A refund the provider made whose answer we never got (we are unknown)."""
    payment_id = charged(app, committed_payment(app))
    with app.app_context():
        refund, _ = refund_payment(payment_id, amount, "customer asked", "ops", uuid.uuid4())
        refund_id = refund.id
    fault = sandbox.add_fault("commit_timeout", hold_s=2.5, dialect="stripe", endpoint="refund")
    with app.app_context():
        send_refund(refund_id)
    requests.delete(f"{sandbox.url}/_sandbox/faults/{fault}", timeout=5)
    assert _refund_state(app, refund_id)[0] == RefundStatus.UNKNOWN
    return refund_id


def test_the_event_before_our_own_answer_settles_the_refund(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    refund_id = _lost_answer(app, sandbox)
    [event] = sandbox_events(sandbox, "refund.created")
    assert signed_post(client, event).status_code == 200
    assert signed_post(client, event).status_code == 200  # a redelivery: recorded once
    run_maintenance_jobs(app)
    assert _refund_state(app, refund_id) == (RefundStatus.SUCCEEDED, OrderStatus.REFUNDED)
    assert rows(app, ProcessedWebhook) == 1
    with app.app_context():
        from tests.helpers import reconcile_refund

        reconcile_refund(refund_id)  # finds it settled: no lease, no call, no change
    assert _refund_state(app, refund_id)[0] == RefundStatus.SUCCEEDED
    assert len(sandbox_refunds(sandbox)) == 1


def test_events_in_any_order(app: Flask, client: FlaskClient, sandbox: Any) -> None:
    refund_id = _lost_answer(app, sandbox, 250)
    [charge_refunded] = sandbox_events(sandbox, "charge.refunded")
    [created] = sandbox_events(sandbox, "refund.created")
    for event in (charge_refunded, created, charge_refunded):  # the charge's event first
        signed_post(client, event)
    run_maintenance_jobs(app)
    assert _refund_state(app, refund_id) == (RefundStatus.SUCCEEDED, OrderStatus.PARTIALLY_REFUNDED)
    with app.app_context():
        notes = {w.event_type: w.state.value for w in db.session.query(ProcessedWebhook)}
    assert notes == {"charge.refunded": "ignored", "refund.created": "applied"}


def test_a_refund_event_that_does_not_match_goes_to_review(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    refund_id = _lost_answer(app, sandbox, 250)
    [event] = sandbox_events(sandbox, "refund.created")
    event["data"]["object"]["amount"] = 999
    event["id"] = "evt_forged_amount"
    signed_post(client, event)
    run_maintenance_jobs(app)
    assert _refund_state(app, refund_id)[0] == RefundStatus.NEEDS_REVIEW


def _refund_of(app: Flask, card: str, *, topup: bool = False) -> tuple[int, int]:
    """(payment id, refund id) of a charged payment made with `card`, refunded in full
    and sent (the provider's first answer applied)."""
    from tests.helpers import committed_topup

    if topup:
        payment_id = committed_topup(app, 700)
        with app.app_context():
            found = db.session.get(Payment, payment_id)
            assert found is not None
            found.payment_method = card
            db.session.commit()
    else:
        payment_id = committed_payment(app, payment_method=card)
    charged(app, payment_id)
    with app.app_context():
        refund, _ = refund_payment(payment_id, None, "customer asked", "ops", uuid.uuid4())
        refund_id = refund.id
        send_refund(refund_id)
    return payment_id, refund_id


def _alerts(app: Flask, refund_id: int) -> list[str]:
    with app.app_context():
        return [
            o.recipient
            for o in db.session.query(OutboxMessage).filter_by(
                kind=EmailKind.REFUND_ALERT, subject_id=refund_id
            )
        ]


def test_a_refund_that_fails_after_it_succeeded_is_reversed_and_an_admin_is_told(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    """Stripe's pm_card_refundFail: the refund succeeds, then fails. The order is paid
    again (the money never reached the customer), an admin is emailed, and the stale
    "succeeded" of an event that arrives late changes nothing."""
    payment_id, refund_id = _refund_of(app, "pm_card_refundFail")
    assert _refund_state(app, refund_id) == (RefundStatus.SUCCEEDED, OrderStatus.REFUNDED)
    assert sandbox.settle_refunds() == 1
    [updated] = sandbox_events(sandbox, "charge.refund.updated")
    [failed] = sandbox_events(sandbox, "refund.failed")
    [created] = sandbox_events(sandbox, "refund.created")  # its object still says succeeded
    for event in (updated, failed, failed, created):  # a repeat, and a stale one last
        assert signed_post(client, event).status_code == 200
    run_maintenance_jobs(app)
    assert _refund_state(app, refund_id) == (RefundStatus.FAILED, OrderStatus.PAID)
    assert _alerts(app, refund_id) == [app.config["ADMIN_ALERT_EMAIL"]]
    with app.app_context():
        refund = db.session.get(Refund, refund_id)
        assert refund is not None and refund.failure_code == "expired_or_canceled_card"
        again, is_new = refund_payment(payment_id, None, "again", "ops", uuid.uuid4())
        assert is_new and again.amount_minor == 1000  # the charge can be refunded again


def test_a_top_up_refund_that_fails_later_puts_the_money_back(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    from services.wallet.audit import audit_wallets

    payment_id, refund_id = _refund_of(app, "pm_card_refundFail", topup=True)
    sandbox.settle_refunds()
    [failed] = sandbox_events(sandbox, "refund.failed")
    signed_post(client, failed)
    run_maintenance_jobs(app)
    with app.app_context():
        payment = db.session.get(Payment, payment_id)
        assert payment is not None
        assert got(Wallet, payment.wallet_id).balance_minor == 700
        assert audit_wallets().is_ok
    assert _refund_state(app, refund_id)[0] == RefundStatus.FAILED


def test_a_pending_refund_waits_for_its_event_without_escalating(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    """Stripe's pm_card_pendingRefund: the refund is pending for days. It is processing
    (not unknown): looked up every REFUND_PROCESSING_LOOKUP_S, never sent to review
    early, and settled by its event."""
    import time_machine

    from models.types import utcnow
    from services.movements.janitor import sweep_kind
    from services.refunds.kind import REFUND
    from tests.helpers import reconcile_refund

    _, refund_id = _refund_of(app, "pm_card_pendingRefund")
    with app.app_context():
        refund = db.session.get(Refund, refund_id)
        assert refund is not None and refund.status == RefundStatus.PROCESSING
        assert refund.provider_refund_id and refund.next_reconcile_at
        assert refund.next_reconcile_at - utcnow() > timedelta(hours=5)
    assert _refund_state(app, refund_id)[1] == OrderStatus.PAID  # nothing back yet
    for days in (2, 9):  # far past the unknown refunds' escalation; the lookups say pending
        with time_machine.travel(utcnow() + timedelta(days=days)), app.app_context():
            assert sweep_kind(REFUND) == 1
            reconcile_refund(refund_id)
            assert _refund_state(app, refund_id)[0] == RefundStatus.PROCESSING
    assert _alerts(app, refund_id) == []
    assert sandbox.settle_refunds() == 1
    [updated] = sandbox_events(sandbox, "charge.refund.updated")
    signed_post(client, updated)
    run_maintenance_jobs(app)
    assert _refund_state(app, refund_id) == (RefundStatus.SUCCEEDED, OrderStatus.REFUNDED)


def test_a_refund_pending_past_its_limit_goes_to_review_and_an_admin_is_told(
    app: Flask, sandbox: Any
) -> None:
    import time_machine

    from models.types import utcnow
    from tests.helpers import reconcile_refund

    _, refund_id = _refund_of(app, "pm_card_pendingRefund")
    days = app.config["REFUND_PROCESSING_MAX_DAYS"] + 1
    with time_machine.travel(utcnow() + timedelta(days=days)), app.app_context():
        reconcile_refund(refund_id)
    assert _refund_state(app, refund_id)[0] == RefundStatus.NEEDS_REVIEW
    assert _alerts(app, refund_id) == [app.config["ADMIN_ALERT_EMAIL"]]


def test_a_refund_made_in_the_providers_dashboard_is_recorded_with_its_source(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    """A refund made in Stripe's Dashboard names nothing of ours: it is matched by the
    payment's intent id and recorded as a refund (actor "provider dashboard"), so the
    order is no longer shown fully paid and a later refund takes only what is left."""
    payment_id = charged(app, committed_payment(app))  # 1000 EUR
    with app.app_context():
        intent_id = got(Payment, payment_id).provider_payment_id
    made = sandbox.dashboard_refund(intent_id, 300)
    [event] = sandbox_events(sandbox, "refund.created")
    for _ in range(2):  # a redelivery records nothing more
        assert signed_post(client, event).status_code == 200
    run_maintenance_jobs(app)
    with app.app_context():
        [outside] = db.session.query(Refund).filter_by(payment_id=payment_id).all()
        assert outside.actor == "provider dashboard" and outside.amount_minor == 300
        assert outside.provider_refund_id == made["id"]
        refund_id = outside.id
        rest, _ = refund_payment(payment_id, None, "the rest", "ops", uuid.uuid4())
        assert rest.amount_minor == 700
    assert _refund_state(app, refund_id) == (RefundStatus.SUCCEEDED, OrderStatus.PARTIALLY_REFUNDED)


def test_a_dashboard_refund_of_a_top_up_takes_the_money_from_the_wallet(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    from services.wallet.audit import audit_wallets
    from tests.helpers import committed_topup

    payment_id = charged(app, committed_topup(app, 700))
    with app.app_context():
        payment = db.session.get(Payment, payment_id)
        assert payment is not None
        intent_id, wallet_id = payment.provider_payment_id, payment.wallet_id
    sandbox.dashboard_refund(str(intent_id), 200)
    [event] = sandbox_events(sandbox, "refund.created")
    signed_post(client, event)
    run_maintenance_jobs(app)
    with app.app_context():
        assert got(Wallet, wallet_id).balance_minor == 500
        assert audit_wallets().is_ok


def test_a_dashboard_refund_that_cannot_be_the_payments_moves_nothing(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    from services.platform.locales import money_text

    payment_id = charged(app, committed_payment(app))  # 1000 EUR
    with app.app_context():
        intent_id = got(Payment, payment_id).provider_payment_id
    sandbox.dashboard_refund(str(intent_id), 300)
    [event] = sandbox_events(sandbox, "refund.created")
    event["id"], event["data"]["object"]["currency"] = "evt_other_currency", "usd"
    signed_post(client, event)
    run_maintenance_jobs(app)
    with app.app_context():
        record = db.session.query(ProcessedWebhook).one()
        assert record.state.value == "rejected"
        assert money_text(1000, "EUR") in record.note and money_text(300, "USD") in record.note
        assert db.session.query(Refund).count() == 0
