"""A worker killed with SIGKILL mid-charge: the sweep recovers the payment, one charge in all."""

from __future__ import annotations

import os
import signal
from datetime import timedelta
from typing import Any

import time_machine
from flask import Flask

from extensions import db
from models import PaymentStatus
from models.types import utcnow
from services import queueing
from services.sweeps import sweep_pending
from tests.factories import make_customer, make_order, make_payment
from tests.helpers import payment, run_jobs
from tests.worker_support import children_of, start_worker, wait_for


def test_sigkilled_worker_mid_charge_is_recovered_with_one_charge(app: Flask, sandbox: Any) -> None:
    sandbox.add_fault("hang", seconds=2, count=1, dialect="stripe", endpoint="create")
    with app.app_context():
        created = make_payment(make_order(make_customer()))
        db.session.commit()
        payment_id = created.id
        queueing.enqueue(
            "stripe", queueing.CHARGE_JOB, payment_id, job_id=queueing.charge_job_id(payment_id)
        )
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
        assert sweep_pending() == 1
        run_jobs(app)
    recovered = payment(app, payment_id)
    assert recovered.status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(payment_id)) == 1
    # The killed call plus the recovery's replay of the same key; no third request.
    assert len(sandbox.requests_log(endpoint="create")) == 2
