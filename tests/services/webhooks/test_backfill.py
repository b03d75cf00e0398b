"""Backfill: undelivered events fetched from the provider are applied once."""

from __future__ import annotations

from typing import Any

from flask import Flask

from jobs.webhooks import backfill_webhooks_job
from models import (
    PaymentStatus,
    ProcessedWebhook,
)
from tests.helpers import (
    charge_payment,
    committed_payment,
    payment,
    rows,
)


def test_backfill_picks_up_undelivered_events_once(
    app: Flask, sandbox: Any, webhook_receiver: Any
) -> None:
    import requests

    sandbox.add_fault("webhook_drop")  # our endpoint was down: nothing arrives
    fault = sandbox.add_fault("commit_timeout", hold_s=2.5, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)  # the answer is lost too: unknown
    assert payment(app, payment_id).status == PaymentStatus.UNKNOWN
    requests.delete(f"{sandbox.url}/_sandbox/faults/{fault}", timeout=5)
    with app.app_context():
        assert backfill_webhooks_job("stripe") == {"applied": 1}
        assert backfill_webhooks_job("stripe") == {"duplicate": 1}
    resolved = payment(app, payment_id)
    assert resolved.status == PaymentStatus.SUCCEEDED
    assert webhook_receiver.deliveries == []
    assert rows(app, ProcessedWebhook) == 1
