"""Enqueueing: deterministic job ids, so a second click or sweep adds nothing."""

from __future__ import annotations

import threading
import time

from flask import Flask
from flask.testing import FlaskClient

from extensions import redis_client
from services.platform import queues
from tests.admin_support import admin_csrf
from tests.helpers import queued_job_ids, unknown_payment


def test_reconcile_now_enqueues_one_job_when_clicked_twice(
    admin_client: FlaskClient, app: Flask
) -> None:
    payment_id = unknown_payment(app)
    for _ in range(2):
        admin_client.post(
            f"/admin/unknown/{payment_id}/reconcile", data={"csrf_token": admin_csrf(admin_client)}
        )
    assert queued_job_ids(app) == [f"reconcile-{payment_id}-0-now"]


def test_rows_that_come_while_the_woken_job_gathers_ride_with_it(app: Flask) -> None:
    with app.app_context():
        queue = queues.named_queue("gather-test")
        assert queues.ring(queue, "jobs.some.job", "bell:test")  # the first row: a job

        def woken_job() -> None:
            with app.app_context():
                queues.answer("bell:test")

        gathering = threading.Thread(target=woken_job)
        started = time.monotonic()
        gathering.start()
        time.sleep(queues.GATHER_S / 4)
        assert queues.ring(queue, "jobs.some.job", "bell:test")  # meanwhile: no new job
        assert len(queue.job_ids) == 1
        gathering.join()
        assert time.monotonic() - started >= queues.GATHER_S
        assert queues.ring(queue, "jobs.some.job", "bell:test")  # after the answer: a job
        assert len(queue.job_ids) == 2
        queue.empty()


def test_the_emails_bell_gathers_longer(app: Flask) -> None:
    assert queues.EMAILS_GATHER_S > queues.GATHER_S
    with app.app_context():
        started = time.monotonic()
        queues.answer(queues.EMAILS_BELL)
        assert time.monotonic() - started >= queues.EMAILS_GATHER_S


def test_a_bell_whose_job_was_lost_lapses_within_seconds(app: Flask) -> None:
    """A worker killed before its woken job answered leaves the bell rung: the rows
    recorded meanwhile enqueue nothing, and wait for the bell to lapse (seconds, not the
    sweeps' half minute) and the next row's ring."""
    with app.app_context():
        queue = queues.named_queue("lost-bell-test")
        assert queues.ring(queue, "jobs.some.job", "bell:lost")
        queue.empty()  # the job is gone, never answered
        assert queues.ring(queue, "jobs.some.job", "bell:lost") and not queue.job_ids
        assert 0 < redis_client.client.ttl("bell:lost") <= 5
        redis_client.client.delete("bell:lost")  # as its lapse does
        assert queues.ring(queue, "jobs.some.job", "bell:lost")
        assert len(queue.job_ids) == 1
        queue.empty()
