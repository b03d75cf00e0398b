"""Webhook application: recorded once, applied once under a lock, never backwards; events
waiting for their payment or their job are applied later (services/webhooks/events.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import requests
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import create_engine, select

from devtools.servers import free_port
from extensions import db
from jobs.webhooks import apply_webhooks_job, retry_pending_webhooks_job
from models import (
    LedgerEntry,
    Payment,
    PaymentStatus,
    PaymentTransition,
    ProcessedWebhook,
    Wallet,
    WebhookState,
)
from models.types import utcnow
from providers.events import ProviderEvent
from services.webhooks.events import apply_event, retry_pending_events
from tests.helpers import (
    charge_payment,
    committed_payment,
    committed_topup,
    last_state,
    payment,
    rows,
    run_maintenance_jobs,
    signed_post,
    stripe_event,
)
from tests.lock_support import is_held
from tests.webhook_support import recorded


def test_the_same_event_twice_has_one_effect(app: Flask, client: FlaskClient) -> None:
    payment_id = committed_payment(app)
    event = stripe_event(payment_id)
    assert signed_post(client, event).get_json() == {"status": "accepted"}
    assert payment(app, payment_id).status == PaymentStatus.PENDING  # recorded, not applied yet
    assert signed_post(client, event).get_json() == {"status": "duplicate"}
    assert last_state(app) == "applied"
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert payment(app, payment_id).provider_payment_id == "pi_test"
    assert rows(app, ProcessedWebhook) == 1
    assert rows(app, PaymentTransition) == 1


def test_ten_copies_at_once_credit_a_topup_once(app: Flask) -> None:
    payment_id = committed_topup(app)
    event = stripe_event(payment_id, amount=700)
    barrier = threading.Barrier(10, timeout=60)
    states: list[str] = []

    def deliver() -> None:
        with app.test_client() as own:  # its own app context, session and connection
            barrier.wait()
            states.append(signed_post(own, event).get_json()["status"])

    threads = [threading.Thread(target=deliver) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(states) == ["accepted"] + ["duplicate"] * 9
    assert last_state(app) == "applied"
    assert rows(app, ProcessedWebhook) == 1
    assert rows(app, PaymentTransition) == 1
    assert rows(app, LedgerEntry) == 1
    with app.app_context():
        assert db.session.scalar(select(Wallet.balance_minor)) == 700


def test_webhook_before_the_charge_call_returns(
    app: Flask, client: FlaskClient, sandbox: Any, webhook_receiver: Any, make_app: Any
) -> None:
    # The provider holds its answer until the test lets it go, once the webhook is applied
    # (never on a clock: a busy machine only makes the test slower); the worker's read
    # timeout is longer than the hold, so the answer still arrives.
    held = sandbox.add_fault(
        "commit_timeout",
        hold_s=20,
        until_deleted=True,
        count=1,
        dialect="stripe",
        endpoint="create",
    )
    worker_app = make_app(PROVIDER_READ_TIMEOUT_S=30.0, PROVIDER_CALL_BUDGET_S=35.0)
    payment_id = committed_payment(app)

    def charge() -> None:
        with worker_app.app_context():
            charge_payment(payment_id)

    charging = threading.Thread(target=charge)
    charging.start()
    deadline = time.monotonic() + 15
    while not webhook_receiver.deliveries and time.monotonic() < deadline:
        time.sleep(0.02)
    delivery = webhook_receiver.deliveries[0]  # the provider's event, while our call waits
    response = client.post(
        "/webhooks/stripe",
        data=delivery.body,
        content_type="application/json",
        headers={"Stripe-Signature": delivery.headers["Stripe-Signature"]},
    )
    assert response.get_json() == {"status": "accepted"}
    assert last_state(app) == "applied"
    assert charging.is_alive()  # our own call is held: it cannot have returned
    requests.delete(f"{sandbox.url}/_sandbox/faults/{held}", timeout=5).raise_for_status()
    charging.join(30)
    assert not charging.is_alive()
    with app.app_context():
        sources = [
            t.source.value
            for t in db.session.scalars(select(PaymentTransition).order_by(PaymentTransition.id))
        ]
    assert sources == ["webhook"]
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(payment_id)) == 1


def test_an_older_event_never_moves_a_payment_backwards(app: Flask, client: FlaskClient) -> None:
    payment_id = committed_payment(app)
    now = int(time.time())
    signed_post(client, stripe_event(payment_id, created=now))
    assert last_state(app) == "applied"
    signed_post(client, stripe_event(payment_id, "payment_intent.payment_failed", created=now - 10))
    assert last_state(app) == "ignored"
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    with app.app_context():
        note = db.session.scalars(
            select(ProcessedWebhook.note).order_by(ProcessedWebhook.id.desc())
        ).first()
    assert note and "older than" in note


def test_failed_after_succeeded_needs_review_with_both_facts(
    app: Flask, client: FlaskClient
) -> None:
    payment_id = committed_payment(app)
    now = int(time.time())
    signed_post(client, stripe_event(payment_id, created=now - 5))
    signed_post(client, stripe_event(payment_id, "payment_intent.payment_failed", created=now))
    assert last_state(app) == "applied"
    assert payment(app, payment_id).status == PaymentStatus.NEEDS_REVIEW
    with app.app_context():
        last = db.session.scalars(
            select(PaymentTransition).order_by(PaymentTransition.id.desc())
        ).first()
    assert last is not None and "was succeeded" in last.reason and "reports failed" in last.reason


def test_unknown_event_types_are_recorded_without_effect(app: Flask, client: FlaskClient) -> None:
    payment_id = committed_payment(app)
    response = signed_post(client, stripe_event(payment_id, "payment_intent.created"))
    assert response.get_json() == {"status": "accepted"}
    assert last_state(app) == "ignored"
    assert rows(app, ProcessedWebhook) == 1
    assert payment(app, payment_id).status == PaymentStatus.PENDING


def test_event_for_a_payment_not_yet_known_is_kept_and_applied_later(
    app: Flask, client: FlaskClient
) -> None:
    event = stripe_event(None, intent_id="pi_later")  # no metadata: matched by provider id
    assert signed_post(client, event).get_json() == {"status": "accepted"}
    assert last_state(app) == "pending"  # kept for later
    payment_id = committed_payment(app)
    with app.app_context():
        found = db.session.get(Payment, payment_id)
        assert found is not None
        found.provider_payment_id = "pi_later"
        db.session.commit()
        assert retry_pending_webhooks_job() == 1
        assert retry_pending_webhooks_job() == 0
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED


def test_redis_down_at_receipt_loses_no_event(app: Flask, make_app: Any) -> None:
    payment_id = committed_payment(app)
    no_redis = make_app(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    response = signed_post(no_redis.test_client(), stripe_event(payment_id))
    assert response.get_json() == {"status": "accepted"}  # recorded; its job could not be queued
    run_maintenance_jobs(app)
    assert payment(app, payment_id).status == PaymentStatus.PENDING
    with app.app_context():
        assert retry_pending_webhooks_job() == 1  # the periodic retry applies it
        assert apply_webhooks_job() == "0 in 1 batches (0 one at a time)"  # a late job: nothing
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert rows(app, PaymentTransition) == 1


def test_a_backlog_of_pending_events_is_applied_in_one_run(app: Flask, make_app: Any) -> None:
    """Events recorded while Redis was down (no jobs) are all applied by one retry run, a
    batch at a time; an event that cannot apply is set aside and holds up nothing."""
    ids = [committed_payment(app) for _ in range(25)]
    no_redis = make_app(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0").test_client()
    for payment_id in ids:
        event = stripe_event(payment_id, intent_id=f"pi_{payment_id}")
        assert signed_post(no_redis, event).get_json()["status"] == "accepted"
    signed_post(no_redis, stripe_event(None, intent_id="pi_nobody"))
    # An event naming a provider payment another payment already has cannot apply (UNIQUE);
    # it is set aside (rejected, with the reason) and blocks none of the events after it.
    lonely = committed_payment(app)
    signed_post(no_redis, stripe_event(lonely, intent_id=f"pi_{ids[0]}"))
    for payment_id in ids[:3]:  # three more events (new ids) after it
        signed_post(no_redis, stripe_event(payment_id, intent_id=f"pi_{payment_id}"))
    with app.app_context():
        assert retry_pending_events(batch=10) == 29  # three batches, one run
        assert retry_pending_events(batch=10) == 0  # the one with no payment is left
        states = db.session.scalars(select(ProcessedWebhook.state)).all()
        note = db.session.scalar(
            select(ProcessedWebhook.note).where(ProcessedWebhook.state == "rejected")
        )
    assert sorted(states) == ["applied"] * 28 + ["pending", "rejected"]
    assert note is not None and "UniqueViolation" in note
    assert all(payment(app, payment_id).status == PaymentStatus.SUCCEEDED for payment_id in ids)
    assert payment(app, lonely).status == PaymentStatus.PENDING


def test_an_event_that_is_not_ours_is_set_aside_after_the_grace_period(
    app: Flask, client: FlaskClient
) -> None:
    """Another integration's intent on the same account: its event names nothing of
    ours. It waits (our own charge may not have stored the intent id yet), then, after
    WEBHOOK_FOREIGN_GRACE_S, is ignored with the reason instead of retried forever."""
    from datetime import timedelta

    import time_machine

    from models.types import utcnow

    event = stripe_event(None, intent_id="pi_someone_elses")
    assert signed_post(client, event).status_code == 200
    assert last_state(app) == WebhookState.PENDING
    with app.app_context():
        assert retry_pending_events() == 0  # within the grace period: it waits
    later = utcnow() + timedelta(seconds=app.config["WEBHOOK_FOREIGN_GRACE_S"] + 60)
    with time_machine.travel(later), app.app_context():
        assert retry_pending_events() == 1
        record = db.session.scalar(select(ProcessedWebhook))
        assert record is not None and record.state == WebhookState.IGNORED
        assert record.note.startswith("not ours: no payment or refund of ours 24 h after")


def test_an_event_locks_the_order_before_its_payment(app: Flask) -> None:
    """The one lock order on the webhook path too: a checkout holds the order while it
    writes a payment, so an event that took the payment first could deadlock with it."""
    payment_id = committed_payment(app)
    other = create_engine(app.config["SQLALCHEMY_DATABASE_URI"])
    try:
        with app.app_context():
            found = db.session.get(Payment, payment_id)
            assert found is not None and found.order_id is not None
            order_id = found.order_id
            db.session.rollback()
            event = ProviderEvent(
                "evt_lock", "payment_intent.succeeded", utcnow(), "succeeded", "pi_x"
            )
            record = ProcessedWebhook(
                provider="stripe",
                event_id="evt_lock",
                event_type=event.event_type,
                state=WebhookState.PENDING,
                payload={},
            )
            db.session.add(record)
            db.session.flush()
            apply_event("stripe", event, record, located=(payment_id, order_id))
            held = {
                table
                for table, row_id in (("orders", order_id), ("payments", payment_id))
                if is_held(other, table, row_id)
            }
            db.session.rollback()
    finally:
        other.dispose()
    assert held == {"orders", "payments"}


def test_a_delivery_after_a_database_restart_is_recorded(
    app: Flask, client: FlaskClient, drop_connections: Callable[[], int]
) -> None:
    first, second = committed_payment(app), committed_payment(app)
    assert signed_post(client, stripe_event(first)).get_json() == {"status": "accepted"}
    with app.app_context():  # the database drops the pooled connections (a restart)
        assert drop_connections()
    response = signed_post(client, stripe_event(second))
    assert response.get_json() == {"status": "accepted"}  # once more, on a new connection
    assert rows(app, ProcessedWebhook) == 2


def test_an_event_of_a_kind_nobody_handles_is_ignored_and_moves_nothing(app: Flask) -> None:
    """The dispatcher hands an event to its kind's handler only; a parser that names a
    kind no declaration registered (a transfer: none exists) moves nothing."""
    payment_id = committed_payment(app)
    with app.app_context():
        event = ProviderEvent(
            "evt_transfer", "transfer.created", utcnow(), "succeeded", "tr_1", kind="transfer"
        )
        record = recorded(event)
        assert apply_event("stripe", event, record) == WebhookState.IGNORED
        assert record.note == "no movement of kind 'transfer'"
        db.session.commit()
    assert payment(app, payment_id).status == PaymentStatus.PENDING
