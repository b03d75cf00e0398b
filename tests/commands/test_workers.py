"""`flask worker`: jobs run inside the app context, in the worker process by default."""

from __future__ import annotations

from typing import Any

from flask import Flask
from redis import Redis
from rq import Queue

from commands.workers import AppSimpleWorker, AppWorker, build_worker
from services.queues import MAINTENANCE_QUEUE


def test_in_process_workers_by_default_and_a_fork_on_request(app: Flask) -> None:
    with app.app_context():
        assert isinstance(build_worker(app, [MAINTENANCE_QUEUE], simple=True), AppSimpleWorker)
        assert isinstance(build_worker(app, [MAINTENANCE_QUEUE]), AppWorker)


def test_a_burst_worker_runs_a_job_with_the_app(app: Flask, runner: Any) -> None:
    queue = Queue(MAINTENANCE_QUEUE, connection=Redis.from_url(app.config["REDIS_URL"]))
    job = queue.enqueue("jobs.webhooks.retry_pending_webhooks_job")
    result = runner.invoke(args=["worker", MAINTENANCE_QUEUE, "--burst"])
    assert result.exit_code == 0, result.output
    job.refresh()
    assert job.get_status() == "finished" and job.return_value() == 0  # ran with the database
