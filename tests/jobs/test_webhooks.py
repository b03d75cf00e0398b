"""Webhook jobs: an application job with nothing waiting changes nothing, and a job an
earlier version queued per event does the same work as the doorbell's."""

from __future__ import annotations

from flask import Flask

from jobs.webhooks import apply_webhook_job, apply_webhooks_job, retry_pending_webhooks_job


def test_jobs_for_nothing_do_nothing(app: Flask) -> None:
    with app.app_context():
        assert apply_webhooks_job() == "0 in 1 batches (0 one at a time)"
        assert apply_webhook_job(2_000_000) == "0 in 1 batches (0 one at a time)"
        assert retry_pending_webhooks_job() == 0
