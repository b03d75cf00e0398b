"""Webhook jobs: an application job for an event that is gone or done changes nothing."""

from __future__ import annotations

from flask import Flask

from jobs.webhooks import apply_webhook_job, retry_pending_webhooks_job


def test_jobs_for_nothing_do_nothing(app: Flask) -> None:
    with app.app_context():
        assert apply_webhook_job(2_000_000) == "done"  # nothing waiting from there on
        assert retry_pending_webhooks_job() == 0
