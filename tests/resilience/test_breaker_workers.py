"""Eight real worker processes against a hanging provider share one breaker."""

from __future__ import annotations

from typing import Any

from flask import Flask
from sqlalchemy import select

from extensions import db
from models import Payment, PaymentStatus
from services.movements import lifecycle
from services.payments.kind import CHARGE
from services.platform.provider_clients import breaker_for
from tests.factories import make_customer, make_order, make_payment
from tests.worker_support import start_worker, stop_workers, wait_for

WORKERS = 8
THRESHOLD = 3


def enqueue_payments(app: Flask, count: int) -> list[int]:
    with app.app_context():
        customer = make_customer()
        ids = [make_payment(make_order(customer)).id for _ in range(count)]
        db.session.commit()
        for payment_id in ids:
            lifecycle.enqueue_send(
                CHARGE, "stripe", payment_id, job_id=CHARGE.send_job_id(payment_id)
            )
        return ids


# What a worker may ask Stripe to do: charge (or replay a charge), and make the payments'
# customer (its first payment queues that: services/accounts/provider_customers.py).
SENDS = ("create", "customer")


def _sent(sandbox: Any) -> int:
    return sum(len(sandbox.requests_log(endpoint=endpoint)) for endpoint in SENDS)


def _in_flight(app: Flask) -> int:
    """Payments sent and still waiting for their answer."""
    with app.app_context():
        return len(
            db.session.scalars(
                select(Payment.id).where(
                    Payment.status == PaymentStatus.PENDING, Payment.first_sent_at.is_not(None)
                )
            ).all()
        )


def test_the_breaker_contains_an_outage_across_processes(app: Flask, sandbox: Any) -> None:
    sandbox.add_fault("hang", seconds=5, dialect="stripe")  # the 30 s incident, shortened
    ids = enqueue_payments(app, 30)
    settings: dict[str, Any] = {
        "BREAKER_FAILURE_THRESHOLD": THRESHOLD,
        "BREAKER_MIN_CALLS": 1000,
        "BREAKER_OPEN_S": 3,
        "PROVIDER_MAX_RETRIES": 0,
        "PROVIDER_READ_TIMEOUT_S": 1.0,
    }
    workers = [start_worker(app, sandbox, **settings) for _ in range(WORKERS)]
    try:
        with app.app_context():
            wait_for(lambda: breaker_for("stripe").snapshot()["state"] != "closed", 60)
        burst = _sent(sandbox)
        # A per-process breaker would let WORKERS x THRESHOLD = 24 through.
        assert THRESHOLD <= burst <= THRESHOLD + WORKERS - 1
        with app.app_context():  # two open periods (3 s, then 6 s), deferred jobs waiting
            wait_for(lambda: breaker_for("stripe").snapshot()["probes"] >= 2, 40)
            snapshot = breaker_for("stripe").snapshot()
        # The second probe's request reached the provider, and its answer (a timeout) was
        # recorded; the next probe is 6 s or more away.
        wait_for(lambda: _sent(sandbox) >= burst + int(snapshot["probes"]), 20)
        wait_for(lambda: _in_flight(app) == 0, 20)
    finally:
        stop_workers(workers)
    total = _sent(sandbox)
    # While open nothing got through; each half-open period let exactly one probe through.
    assert snapshot["probes"] >= 1
    assert total - burst == snapshot["probes"]
    assert snapshot["rejected"] > 0
    with app.app_context():
        statuses = {
            p.status for p in db.session.scalars(select(Payment).where(Payment.id.in_(ids)))
        }
        # Deferred by the open breaker: a job the test's SIGKILL cut in its claim (between
        # the in-flight check and the stop) keeps its lease, and is not one of them.
        deferred = db.session.scalars(
            select(Payment).where(
                Payment.status == PaymentStatus.PENDING,
                Payment.next_attempt_at.is_not(None),
                Payment.lease_expires_at.is_(None),
            )
        ).all()
    assert PaymentStatus.FAILED not in statuses  # an outage is not a decline
    assert deferred and all(p.first_sent_at is None for p in deferred)  # provably never sent
