"""The one janitor, for every kind we send: a row whose job was lost is enqueued again
(once, under its deterministic job id), a row under a live lease is left alone, a
deferred row waits for its time, and a due lookup runs."""

from __future__ import annotations

from datetime import timedelta

from flask import Flask

from extensions import db
from models import Payment, PaymentStatus, Refund, RefundStatus
from models.types import utcnow
from services.movements import janitor
from services.payments.kind import CHARGE
from services.refunds.kind import REFUND
from tests.factories import make_customer, make_order, make_payment, make_refund
from tests.helpers import queued_job_ids, scheduled_job_ids


def _age(row: Payment | Refund, seconds: float) -> None:
    row.updated_at = utcnow() - timedelta(seconds=seconds)


def test_lost_sends_are_enqueued_once_and_leased_or_deferred_ones_are_left(app: Flask) -> None:
    with app.app_context():
        lost = make_payment(make_order(make_customer()))
        leased = make_payment(make_order(make_customer()))
        leased.lease_expires_at = utcnow() + timedelta(minutes=5)
        deferred = make_payment(make_order(make_customer()))
        deferred.next_attempt_at = utcnow() + timedelta(minutes=5)
        fresh = make_payment(make_order(make_customer()))
        refund = make_refund(make_payment(make_order(make_customer())))
        for row in (lost, leased, deferred, refund):
            _age(row, 3600)
        db.session.commit()
        ids = (lost.id, fresh.id, refund.id)
        assert janitor.sweep_sends(CHARGE) == 1
        assert janitor.sweep_sends(CHARGE) == 1  # same job
        assert janitor.sweep_sends(REFUND) == 1
    queued = queued_job_ids(app)
    assert queued.count(CHARGE.send_job_id(ids[0])) == 1
    assert CHARGE.send_job_id(ids[1]) not in queued  # written a moment ago: its job runs
    assert REFUND.send_job_id(ids[2]) in queued


def test_due_lookups_run_and_future_ones_wait(app: Flask) -> None:
    with app.app_context():
        due = make_payment(make_order(make_customer()))
        due.status, due.next_reconcile_at = PaymentStatus.UNKNOWN, utcnow() - timedelta(seconds=1)
        later = make_payment(make_order(make_customer()))
        later.status, later.next_reconcile_at = PaymentStatus.UNKNOWN, utcnow() + timedelta(hours=1)
        processing = make_refund(make_payment(make_order(make_customer())), RefundStatus.PROCESSING)
        db.session.commit()
        ids = (due.id, later.id, processing.id)
        assert janitor.sweep_lookups(CHARGE) == 1
        assert janitor.sweep_lookups(REFUND) == 1
    waiting = queued_job_ids(app) + scheduled_job_ids(app)
    assert CHARGE.lookup_job_id(ids[0], 0) in waiting
    assert CHARGE.lookup_job_id(ids[1], 0) not in waiting
    assert REFUND.lookup_job_id(ids[2], 0) in waiting
