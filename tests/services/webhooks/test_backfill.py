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


def test_a_provider_without_a_list_of_undelivered_events_is_never_asked(
    app: Flask, sandbox: Any
) -> None:
    """Braintree keeps no such list: its backfill, run every minute, once counted the
    missing answer as a failed call and opened the breaker of a healthy Braintree."""
    from jobs.schedule import periodic_jobs
    from services.platform.provider_clients import breaker_for
    from settings import settings

    with app.app_context():
        for _ in range(20):
            assert backfill_webhooks_job("braintree") == {}
        snapshot = breaker_for("braintree").snapshot()
        scheduled = [
            job.args for job in periodic_jobs(settings()) if job.func is backfill_webhooks_job
        ]
    assert (snapshot["state"], snapshot["window_calls"]) == ("closed", 0)
    assert sandbox.requests_log(dialect="braintree") == []
    assert scheduled == [("stripe",)]
