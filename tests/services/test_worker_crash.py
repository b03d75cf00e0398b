"""A worker killed with SIGKILL mid-charge: the sweep recovers the payment, one charge in all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import time_machine
from flask import Flask

from extensions import db
from jobs.queues import provider_queue_name
from models import PaymentStatus
from models.types import utcnow
from services import queueing
from services.charging import LEASE_S
from services.sweeps import sweep_pending
from tests.conftest import FAST_PROVIDER_CONFIG
from tests.factories import make_customer, make_order, make_payment
from tests.helpers import payment, run_jobs

PROJECT_DIR = Path(__file__).resolve().parents[2]


def wait_for(predicate: Any, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def children_of(pid: int) -> list[int]:
    """Direct children of `pid` (RQ's work horse runs in its own session)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children.append(int(stat.parent.name))
    return children


def start_worker(app: Flask, sandbox: Any) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"],
        "REDIS_URL": app.config["REDIS_URL"],
        "STRIPE_API_BASE": sandbox.url,
        "SECRET_KEY": "test",
        **{k: str(v) for k, v in FAST_PROVIDER_CONFIG.items()},
    }
    return subprocess.Popen(
        [sys.executable, "-m", "flask", "--app", "app", "worker", provider_queue_name("stripe")],
        cwd=PROJECT_DIR,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


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
        time_machine.travel(utcnow() + timedelta(seconds=LEASE_S + 31), tick=True),
        app.app_context(),
    ):
        assert sweep_pending() == 1
        run_jobs(app)
    recovered = payment(app, payment_id)
    assert recovered.status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(payment_id)) == 1
    # The killed call plus the recovery's replay of the same key; no third request.
    assert len(sandbox.requests_log(endpoint="create")) == 2
