"""Payment jobs take ids, re-read state and are safe to run twice."""

from __future__ import annotations

from typing import Any

from flask import Flask

from jobs.payments import charge_payment_job, sweep_pending_payments_job
from models import PaymentStatus
from tests.helpers import committed_payment, payment


def test_the_charge_job_runs_twice_with_one_charge(app: Flask, sandbox: Any) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment_job(payment_id)
        charge_payment_job(payment_id)  # a repeat: the payment is no longer pending
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(payment_id)) == 1


def test_a_job_for_a_missing_payment_does_nothing(app: Flask, sandbox: Any) -> None:
    with app.app_context():
        charge_payment_job(2_000_000)
        assert sweep_pending_payments_job() == 0
    assert sandbox.requests_log() == []
