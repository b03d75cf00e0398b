"""The sweeps: pending payments nobody works on, and due unknown payments, are enqueued
again, once."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import requests
import time_machine
from flask import Flask

from models import PaymentStatus
from models.types import utcnow
from services.movements import lifecycle
from services.movements.janitor import sweep_lookups, sweep_sends
from services.payments.kind import CHARGE
from services.platform import queues
from tests.helpers import (
    charge_payment,
    committed_payment,
    payment,
    queued_job_ids,
    run_jobs,
    scheduled_job_ids,
)


def test_sweep_enqueues_due_reconciliations_once(app: Flask, sandbox: Any) -> None:
    fault = sandbox.add_fault("commit_timeout", hold_s=2.5, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
        assert sweep_lookups(CHARGE) == 0  # not due yet
    requests.delete(f"{sandbox.url}/_sandbox/faults/{fault}", timeout=5)
    due = payment(app, payment_id).next_reconcile_at
    assert due is not None
    with time_machine.travel(due + timedelta(seconds=1), tick=True), app.app_context():
        # The delayed job already exists under the same id: the sweep adds nothing.
        assert sweep_lookups(CHARGE) == 1
        assert queued_job_ids(app) == []
    with app.app_context():
        from redis import Redis

        Redis.from_url(app.config["REDIS_URL"]).flushdb()  # Redis lost everything
    with time_machine.travel(due + timedelta(seconds=1), tick=True), app.app_context():
        assert sweep_lookups(CHARGE) == 1
        assert queued_job_ids(app) == [f"reconcile-{payment_id}-0"]
        run_jobs(app)
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(payment_id)) == 1


def test_sweep_takes_over_a_scheduled_job_nobody_moves(app: Flask, sandbox: Any) -> None:
    """RQ's scheduler dies when Redis goes away under it; its overdue jobs run anyway."""
    fault = sandbox.add_fault("commit_timeout", hold_s=2.5, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    requests.delete(f"{sandbox.url}/_sandbox/faults/{fault}", timeout=5)
    job_id = f"reconcile-{payment_id}-0"
    assert scheduled_job_ids(app) == [job_id]
    due = payment(app, payment_id).next_reconcile_at
    assert due is not None
    with time_machine.travel(due + timedelta(seconds=3), tick=True), app.app_context():
        assert sweep_lookups(CHARGE) == 1
        assert queued_job_ids(app) == []  # the scheduler may just be a second late
    with time_machine.travel(due + timedelta(seconds=60), tick=True), app.app_context():
        assert sweep_lookups(CHARGE) == 1
        assert queued_job_ids(app) == [job_id]  # a minute late: nobody is moving it
        assert scheduled_job_ids(app) == []
        assert sweep_lookups(CHARGE) == 1
        assert queued_job_ids(app) == [job_id]  # once
        run_jobs(app)
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(payment_id)) == 1


def test_sweep_takes_over_a_job_a_worker_took_but_never_started(app: Flask, sandbox: Any) -> None:
    """A worker moves a job to RQ's intermediate list before it starts it; when Redis goes
    away right then (a failover), the job stays "queued" in no queue: nobody runs it."""
    payment_id = committed_payment(app)
    job_id = f"charge-{payment_id}"
    with app.app_context():
        lifecycle.enqueue_send(CHARGE, "stripe", payment_id, job_id=job_id)
        queue = queues.provider_queue("stripe")
        queue.connection.lrem(queue.key, 0, job_id)  # taken: not in the queue any more
        queue.connection.lpush(queue.intermediate_queue_key, job_id)
        assert queued_job_ids(app) == []
    later = utcnow() + timedelta(seconds=app.config["PENDING_SWEEP_GRACE_S"] + 1)
    with time_machine.travel(later, tick=True), app.app_context():
        assert sweep_sends(CHARGE) == 1
        assert queued_job_ids(app) == [job_id]
        assert sweep_sends(CHARGE) == 1  # queued for real now: not doubled
        assert queued_job_ids(app) == [job_id]
    run_jobs(app)
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(payment_id)) == 1
