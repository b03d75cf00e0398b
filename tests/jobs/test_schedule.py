"""The periodic jobs: sweeps on the maintenance queue, backfill on each provider's
queue, at the configured intervals."""

from __future__ import annotations

from config import settings_from_env
from settings import Settings


def test_intervals_and_waits_are_settings() -> None:
    from jobs.schedule import periodic_jobs

    settings = settings_from_env(
        {
            "SWEEP_INTERVAL_S": "5",
            "WEBHOOK_RETRY_INTERVAL_S": "7",
            "BACKFILL_INTERVAL_S": "11",
            "BOOKS_RECONCILE_INTERVAL_S": "13",
            "PAYMENT_LEASE_S": "90",
            "STRIPE_SETTLE_S": "30",
        }
    )
    intervals = {
        (job.func.__name__, job.args): job.interval_s
        for job in periodic_jobs(Settings.from_config(settings))
    }
    assert intervals[("sweep_job", ())] == 5
    assert intervals[("retry_pending_webhooks_job", ())] == 7
    assert intervals[("backfill_webhooks_job", ("stripe",))] == 11
    assert intervals[("reconcile_books_job", ("stripe",))] == 13
    assert settings["PAYMENT_LEASE_S"] == 90 and settings["STRIPE_SETTLE_S"] == 30.0
