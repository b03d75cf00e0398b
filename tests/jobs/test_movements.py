"""The refund jobs run on the provider's queue with a real RQ worker, and the sweep's job
on the maintenance queue."""

from __future__ import annotations

import uuid
from typing import Any

from flask import Flask

from extensions import db
from jobs.refunds import sweep_refunds_job
from models import Refund, RefundStatus
from services.refunds.issue import refund_payment
from tests.helpers import charged, committed_payment, run_jobs, sandbox_refunds


def test_a_queued_refund_is_sent_by_the_providers_worker(app: Flask, sandbox: Any) -> None:
    payment_id = charged(app, committed_payment(app, provider="acquirer"))
    with app.app_context():
        refund, _ = refund_payment(payment_id, 100, "worker test", "ops", uuid.uuid4())
        refund_id = refund.id
    run_jobs(app, "acquirer")
    with app.app_context():
        assert db.session.get(Refund, refund_id).status == RefundStatus.SUCCEEDED  # type: ignore[union-attr]
        assert sweep_refunds_job() == 0  # nothing left to pick up
    assert [r["amount"] for r in sandbox_refunds(sandbox)] == [100]
