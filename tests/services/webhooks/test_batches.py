"""Batch application of webhook events: one waiting job however many events, many per
transaction, a bad event set aside without holding the others back, two workers without
deadlocks."""

from __future__ import annotations

import time
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from rq import Queue
from sqlalchemy import func, select
from sqlalchemy.event import listen, remove

from extensions import db, redis_client
from models import (
    LedgerEntry,
    Payment,
    PaymentStatus,
    PaymentTransition,
    ProcessedWebhook,
    WebhookState,
)
from services.platform import queues
from services.platform.queues import MAINTENANCE_QUEUE
from services.wallet.audit import audit_wallets
from services.webhooks import batches
from services.webhooks.batches import BATCH
from tests.helpers import (
    committed_payment,
    committed_topup,
    payment,
    run_maintenance_jobs,
    signed_post,
    stripe_event,
)
from tests.worker_support import start_worker, stop_workers


def _deliver(client: FlaskClient, payments: list[int], amount: int = 1000) -> None:
    for payment_id in payments:
        event = stripe_event(payment_id, intent_id=f"pi_{payment_id}", amount=amount)
        assert signed_post(client, event).status_code == 200


def _queued(app: Flask) -> list[str]:
    with app.app_context():
        return Queue(MAINTENANCE_QUEUE, connection=redis_client.client).job_ids


def _states(app: Flask) -> dict[str, int]:
    with app.app_context():
        return dict(
            db.session.execute(
                select(ProcessedWebhook.state, func.count()).group_by(ProcessedWebhook.state)
            ).all()
        )


def test_one_job_waits_for_all_the_events_and_applies_them_in_batches(
    app: Flask, client: FlaskClient, monkeypatch: Any
) -> None:
    payments = [committed_payment(app) for _ in range(12)]
    _deliver(client, payments)
    queued = _queued(app)
    assert len(queued) == 1  # the first event rang; the other eleven found it rung

    monkeypatch.setattr(batches, "BATCH", 5)
    with app.app_context():
        assert batches.apply_waiting() == "12 in 3 batches (0 one at a time)"

    assert _states(app) == {WebhookState.APPLIED: 12}
    with app.app_context():
        statuses = db.session.scalars(select(Payment.status).where(Payment.id.in_(payments)))
        assert set(statuses) == {PaymentStatus.SUCCEEDED}
    # The full batches rang for help; the jobs that came find nothing, and answer.
    run_maintenance_jobs(app)
    assert _queued(app) == []
    with app.app_context():
        assert redis_client.client.get(queues.WEBHOOKS_BELL) is None
    _deliver(client, [committed_payment(app)])  # the next event rings again
    assert len(_queued(app)) == 1


def test_an_event_recorded_while_the_job_waits_rides_with_it(
    app: Flask, client: FlaskClient
) -> None:
    _deliver(client, [committed_payment(app)])
    _deliver(client, [committed_payment(app)])  # the bell is rung: no second job
    assert len(_queued(app)) == 1
    run_maintenance_jobs(app)
    assert _states(app) == {WebhookState.APPLIED: 2}


def test_a_batch_is_capped(app: Flask, client: FlaskClient) -> None:
    _deliver(client, [committed_payment(app) for _ in range(BATCH + 3)])
    with app.app_context():
        assert batches.apply_batch() == (BATCH, False)
    assert _states(app) == {WebhookState.APPLIED: BATCH, WebhookState.PENDING: 3}


def test_events_of_one_payment_in_one_batch_never_move_it_backwards(
    app: Flask, client: FlaskClient
) -> None:
    """The later event is applied first (arrival order); the older one, applied after it in
    the same transaction, sees it and is ignored. Each event's record is written once (its
    state, note, payment and time together), not also by its handler's first statement."""
    payment_id, now = committed_payment(app), int(time.time())
    for kind, created in [
        ("payment_intent.succeeded", now),
        ("payment_intent.payment_failed", now - 10),
    ]:
        event = stripe_event(payment_id, kind, created=created, intent_id=f"pi_{payment_id}")
        assert signed_post(client, event).status_code == 200
    writes: list[int] = []

    def count(
        conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool
    ) -> None:
        if statement.startswith("UPDATE processed_webhooks"):
            writes.append(len(params) if many else 1)

    with app.app_context():
        listen(db.engine, "before_cursor_execute", count)
        try:
            assert batches.apply_batch() == (2, False)
        finally:
            remove(db.engine, "before_cursor_execute", count)
        records = db.session.scalars(select(ProcessedWebhook).order_by(ProcessedWebhook.id)).all()
        assert [(r.state, r.payment_id) for r in records] == [
            (WebhookState.APPLIED, payment_id),
            (WebhookState.IGNORED, payment_id),
        ]
        assert all(r.processed_at is not None for r in records)
        assert "older than" in records[1].note
    assert sum(writes) == 2
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED


def test_a_job_out_of_budget_rings_again_for_the_rest(
    app: Flask, client: FlaskClient, monkeypatch: Any
) -> None:
    _deliver(client, [committed_payment(app) for _ in range(6)])
    monkeypatch.setattr(batches, "BATCH", 2)
    monkeypatch.setattr(batches, "BUDGET_S", -1.0)  # spent after the first batch
    with app.app_context():
        assert batches.apply_waiting() == "2 in 1 batches (0 one at a time); more waiting"
    assert _states(app) == {WebhookState.APPLIED: 2, WebhookState.PENDING: 4}
    assert len(_queued(app)) == 2  # the first event's job (here: called) and the new one


def test_an_event_that_cannot_apply_is_set_aside_and_the_rest_apply(
    app: Flask, client: FlaskClient
) -> None:
    good = [committed_payment(app) for _ in range(3)]
    _deliver(client, good[:1])
    bad = stripe_event(None, intent_id="pi_x")
    bad["data"]["object"]["metadata"] = {"payment_id": "not-an-id"}
    assert signed_post(client, bad).status_code == 200
    _deliver(client, good[1:])

    with app.app_context():
        assert batches.apply_batch() == (4, True)

    assert _states(app) == {WebhookState.APPLIED: 3, WebhookState.REJECTED: 1}


def test_two_workers_apply_every_event_once(app: Flask, client: FlaskClient, sandbox: Any) -> None:
    """Two `flask worker --burst` processes drain 160 events: each payment has two (the
    provider's success and a later copy with another id), top-ups among them."""
    orders = [committed_payment(app) for _ in range(40)]
    topups = [committed_topup(app) for _ in range(40)]
    for _ in range(2):
        _deliver(client, orders)
        _deliver(client, topups, amount=700)

    workers = [start_worker(app, sandbox, MAINTENANCE_QUEUE, "--burst") for _ in range(2)]
    try:
        for worker in workers:
            assert worker.wait(timeout=120) == 0
    finally:
        stop_workers(workers)

    states = _states(app)
    assert states.get(WebhookState.PENDING, 0) == 0 and states.get(WebhookState.REJECTED, 0) == 0
    assert sum(states.values()) == 160
    with app.app_context():
        succeeded: Any = db.session.execute(
            select(PaymentTransition.payment_id, func.count())
            .where(PaymentTransition.to_status == PaymentStatus.SUCCEEDED)
            .group_by(PaymentTransition.payment_id)
        ).all()
        credits = db.session.scalar(select(func.count()).select_from(LedgerEntry))
        assert sorted(p for p, _ in succeeded) == sorted(orders + topups)
        assert {n for _, n in succeeded} == {1}
        assert credits == 40
        assert audit_wallets().mismatches == []


def test_a_full_batch_rings_for_another_worker(
    app: Flask, client: FlaskClient, monkeypatch: Any
) -> None:
    _deliver(client, [committed_payment(app) for _ in range(3)])
    assert len(_queued(app)) == 1
    monkeypatch.setattr(batches, "BATCH", 2)
    with app.app_context():
        queues.answer(queues.WEBHOOKS_BELL)  # what the job does first
        assert batches.apply_batch() == (2, False)  # full: more may wait
    assert len(_queued(app)) == 2  # a second job, for a second worker meanwhile
    with app.app_context():
        assert batches.apply_batch() == (1, False)  # the last one: no more help asked
    assert len(_queued(app)) == 2


def test_events_of_every_kind_share_one_batch_in_the_one_lock_order(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    """Issue 49 (e): a refund's event sent its whole batch one at a time, and a dispute's
    stayed in the batch sorted first, locking its payment out of the batch's id order.
    Now each kind's locator says which payment it locks first, and the batch takes them
    in that order: the refund of payment 1 before the dispute of payment 2."""
    import uuid

    from services.refunds.issue import refund_payment
    from tests.helpers import charged, sandbox_events, send_refund

    refunded = charged(app, committed_payment(app))
    disputed = charged(app, committed_payment(app, payment_method="pm_card_createDispute"))
    assert refunded < disputed
    with app.app_context():
        refund, _ = refund_payment(refunded, 300, "one cup broke", "ops", uuid.uuid4())
        send_refund(refund.id)
    for event in [
        *sandbox_events(sandbox, "charge.dispute.created"),
        *sandbox_events(sandbox, "refund.created"),
    ]:
        assert signed_post(client, event).status_code == 200
    with app.app_context():
        assert batches.apply_batch() == (2, False)  # in one transaction, not one at a time
        applied = db.session.scalars(
            select(ProcessedWebhook)
            .where(ProcessedWebhook.state == WebhookState.APPLIED)
            .order_by(ProcessedWebhook.processed_at)
        ).all()
    assert [(e.event_type, e.payment_id) for e in applied] == [
        ("refund.created", refunded),
        ("charge.dispute.created", disputed),
    ]
