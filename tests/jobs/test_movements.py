"""The jobs of every movement kind take the kind's name and a row id, run on the
provider's queue with a real RQ worker, and are safe to run twice; the janitor's job
runs on the maintenance queue."""

from __future__ import annotations

import uuid
from typing import Any

from flask import Flask

from jobs.movements import look_up_job, send_job, sweep_job
from models import PaymentStatus, Refund, RefundStatus
from services.refunds.issue import refund_payment
from tests.helpers import (
    charged,
    committed_payment,
    got,
    payment,
    run_jobs,
    sandbox_refunds,
    unknown_payment,
)


def test_a_queued_refund_is_sent_by_the_providers_worker(app: Flask, sandbox: Any) -> None:
    payment_id = charged(app, committed_payment(app, provider="braintree"))
    sandbox.age_braintree(3600)  # settled: Braintree refunds part of a settled sale only
    with app.app_context():
        refund, _ = refund_payment(payment_id, 100, "worker test", "ops", uuid.uuid4())
        refund_id = refund.id
    run_jobs(app, "braintree")
    with app.app_context():
        assert got(Refund, refund_id).status == RefundStatus.SUCCEEDED
        assert sweep_job() == 0  # nothing left to pick up
    assert [r["amount"] for r in sandbox_refunds(sandbox)] == [100]


def test_the_send_job_runs_twice_with_one_charge(app: Flask, sandbox: Any) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        send_job("charge", payment_id)
        send_job("charge", payment_id)  # a repeat: the payment is no longer pending
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(payment_id)) == 1


def test_the_lookup_job_resolves_an_unknown_payment(app: Flask, sandbox: Any) -> None:
    payment_id = unknown_payment(app)
    with app.app_context():
        look_up_job("charge", payment_id)
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(payment_id)) == 1


def test_a_job_for_a_missing_row_does_nothing(app: Flask, sandbox: Any) -> None:
    with app.app_context():
        send_job("charge", 2_000_000)
        send_job("refund", 2_000_000)
        look_up_job("refund", 2_000_000)
        assert sweep_job() == 0
    assert sandbox.requests_log() == []
