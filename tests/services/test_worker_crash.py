"""A worker killed with SIGKILL mid-charge: the sweep recovers the payment, one charge in all."""

from __future__ import annotations

import os
import signal
from datetime import timedelta
from typing import Any

import time_machine
from flask import Flask
from rq.job import JobStatus

from extensions import db
from models import PaymentStatus
from models.types import utcnow
from services.movements import engine, lifecycle
from services.movements.janitor import sweep_sends
from services.movements.kinds import SEND_JOB
from services.payments.kind import CHARGE
from services.platform import queues
from services.platform.queues import provider_queue
from tests.factories import make_customer, make_order, make_payment
from tests.helpers import payment, queued_job_ids, run_jobs
from tests.worker_support import children_of, start_worker, wait_for


def test_sigkilled_worker_mid_charge_is_recovered_with_one_charge(app: Flask, sandbox: Any) -> None:
    sandbox.add_fault("hang", seconds=2, count=1, dialect="stripe", endpoint="create")
    with app.app_context():
        created = make_payment(make_order(make_customer()))
        db.session.commit()
        payment_id = created.id
        lifecycle.enqueue_send(CHARGE, "stripe", payment_id, job_id=CHARGE.send_job_id(payment_id))
    worker = start_worker(app, sandbox)
    try:
        wait_for(lambda: sandbox.requests_log(endpoint="create"))  # the call is in flight
        for pid in [*children_of(worker.pid), worker.pid]:  # the work horse, then the worker
            os.kill(pid, signal.SIGKILL)
        worker.wait(timeout=10)
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
    stuck = payment(app, payment_id)
    assert stuck.status == PaymentStatus.PENDING
    assert stuck.first_sent_at is not None  # "may have been sent" was recorded first
    wait_for(lambda: sandbox.succeeded_charges(str(payment_id)) == 1)  # the provider did it
    with (
        time_machine.travel(
            utcnow() + timedelta(seconds=app.config["PAYMENT_LEASE_S"] + 31), tick=True
        ),
        app.app_context(),
    ):
        assert sweep_sends(CHARGE) == 1
        run_jobs(app)
    recovered = payment(app, payment_id)
    assert recovered.status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(payment_id)) == 1
    # The killed call plus the recovery's replay of the same key; no third request.
    assert len(sandbox.requests_log(endpoint="create")) == 2


def test_a_worker_cut_off_mid_charge_loses_the_payment_when_its_lease_runs_out(
    make_app: Any, sandbox: Any
) -> None:
    """A worker on a host that lost its network: its job stays "started" in Redis and the
    payment's lease is taken. A job that just started (no lease yet) is left alone; once
    the lease has run out another worker takes over, without waiting for the job timeout."""
    app = make_app(PAYMENT_LEASE_S=6, PENDING_SWEEP_GRACE_S=2)  # a lease of two calls
    with app.app_context():
        created = make_payment(make_order(make_customer()))
        db.session.commit()
        payment_id = created.id
        job = provider_queue("stripe").enqueue(
            SEND_JOB, CHARGE.name, payment_id, job_id=CHARGE.send_job_id(payment_id)
        )
        provider_queue("stripe").remove(job)  # taken off the queue by the worker...
        job.set_status(JobStatus.STARTED)  # ...and started, just now
        job.started_at = utcnow()
        job.save()
    grace = app.config["PENDING_SWEEP_GRACE_S"] + 1
    with time_machine.travel(utcnow() + timedelta(seconds=grace), tick=True), app.app_context():
        assert sweep_sends(CHARGE) == 1
        assert queued_job_ids(app) == []  # no lease taken yet: it may be starting, left alone
        assert engine.claim(CHARGE, payment_id, utcnow(), is_send=True) is not None  # the worker's
        db.session.commit()
    lapsed = utcnow() + timedelta(seconds=grace + app.config["PAYMENT_LEASE_S"] + 1)
    assert lapsed < utcnow() + timedelta(seconds=queues.JOB_TIMEOUT_S + 5)  # not outlived
    with time_machine.travel(lapsed, tick=True), app.app_context():
        assert sweep_sends(CHARGE) == 1
        assert queued_job_ids(app) == [CHARGE.send_job_id(payment_id)]  # taken over
        run_jobs(app)
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(payment_id)) == 1
