"""The 3-D Secure jobs of payments take ids, re-read state and do nothing for a payment
that is not waiting for its customer."""

from __future__ import annotations

from typing import Any

from flask import Flask

from jobs.payments import (
    cancel_abandoned_job,
    check_authentication_job,
    sweep_abandoned_payments_job,
)
from models import PaymentStatus
from tests.helpers import charged, committed_payment, payment


def test_a_job_for_a_payment_not_waiting_does_nothing(app: Flask, sandbox: Any) -> None:
    payment_id = charged(app, committed_payment(app))
    calls = len(sandbox.requests_log())
    with app.app_context():
        check_authentication_job(payment_id)
        cancel_abandoned_job(payment_id)
        check_authentication_job(2_000_000)
        assert sweep_abandoned_payments_job() == 0
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert len(sandbox.requests_log()) == calls
