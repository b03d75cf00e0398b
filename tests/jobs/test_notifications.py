"""The notifications queue's worker sends the outbox; its sweep runs from the schedule."""

from __future__ import annotations

from typing import Any

from flask import Flask

from jobs.notifications import sweep_outbox_job
from jobs.schedule import periodic_jobs
from services.accounts.customers import create_customer
from settings import settings
from tests.helpers import run_notification_jobs


def test_the_worker_sends_and_the_sweep_is_scheduled(app: Flask, mail_sink: Any) -> None:
    with app.app_context():
        create_customer("worker@example.com", "password123", ["EUR"])
        assert sweep_outbox_job() == 0  # its job is queued already: nothing is lost
    run_notification_jobs(app)
    assert [m["Subject"] for m in mail_sink.messages()] == ["Welcome to Payments Monolith"]
    assert sweep_outbox_job in [job.func for job in periodic_jobs(settings(app))]
