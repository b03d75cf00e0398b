"""`flask worker QUEUE` and `flask scheduler`: the RQ processes, each building its own app."""

from __future__ import annotations

import logging
import time
from typing import Any

import click
from flask import Flask, current_app
from flask.cli import with_appcontext
from redis.exceptions import RedisError
from rq import SimpleWorker, Worker
from rq.cron import CronScheduler
from rq.job import Job
from rq.queue import Queue

from extensions import db, redis_client
from jobs.schedule import periodic_jobs

log = logging.getLogger(__name__)
WORKER_MAINTENANCE_S = 30
SCHEDULER_RETRY_S = 1.0  # the scheduler's and the workers' pause before trying Redis again


class AppContextMixin:
    """Runs every job inside the Flask app context of the worker process."""

    flask_app: Flask

    def perform_job(self, job: Job, queue: Queue, *args: Any, **kwargs: Any) -> bool:
        with self.flask_app.app_context():
            try:
                return super().perform_job(job, queue, *args, **kwargs)  # type: ignore[misc]
            finally:
                db.session.remove()


class AppWorker(AppContextMixin, Worker):
    """Forks a work horse per job (`flask worker --fork`): a crashing job cannot kill the
    worker, at the price of a fork and a fresh database connection for every job."""

    def main_work_horse(self, *args: Any, **kwargs: Any) -> None:
        # Connections inherited through fork belong to the parent: never reuse them.
        with self.flask_app.app_context():
            db.engine.dispose(close=False)
        super().main_work_horse(*args, **kwargs)


class AppSimpleWorker(AppContextMixin, SimpleWorker):
    """Runs jobs in the worker process itself, reusing its pooled connections: the default.

    Jobs are short (one provider call within its budget); RQ still enforces the job
    timeout (SIGALRM), and a worker that dies is restarted by supervisor while the
    payment's lease and the sweeps recover its job. Measured by bench/reconcile_drain.py:
    about 4x the jobs per second of fork-per-job on the same machine.
    """


def build_worker(app: Flask, queue_names: list[str], *, simple: bool = False) -> Worker:
    cls = AppSimpleWorker if simple else AppWorker
    # Maintenance also restarts RQ's scheduler when it died (Redis went away under it);
    # RQ's default of ten minutes would leave scheduled reconciliations waiting that long.
    worker = cls(
        queue_names,
        connection=redis_client.client,
        maintenance_interval=WORKER_MAINTENANCE_S,
    )
    worker.flask_app = app
    return worker  # type: ignore[return-value]


@click.command("worker")
@click.argument("queues", nargs=-1, required=True)
@click.option("--fork", is_flag=True, help="Fork a work horse per job (RQ's default).")
@click.option("--burst", is_flag=True, help="Exit when the queues are empty.")
@with_appcontext
def worker_command(queues: tuple[str, ...], fork: bool, burst: bool) -> None:
    """Work the given RQ queues (one provider queue per program in production)."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    while True:
        try:
            worker = build_worker(app, list(queues), simple=not fork)  # asks Redis too
            worker.work(with_scheduler=True, burst=burst, logging_level="INFO")
            return
        except RedisError as exc:
            # RQ survives a lost connection only while it waits for a job; anywhere else
            # (a heartbeat, its own registration) it exits. Exiting at each try of a long
            # Redis outage would use up supervisor's start retries and leave the queue
            # with no worker when Redis is back (seen in the cluster drill's failover).
            if burst:
                raise
            log.warning("worker lost Redis (%s); starting again in %s s", exc, SCHEDULER_RETRY_S)
            time.sleep(SCHEDULER_RETRY_S)


@click.command("scheduler")
@with_appcontext
def scheduler_command() -> None:
    """Enqueue the periodic jobs of jobs/schedule.py at their intervals.

    RQ's scheduler stops at the first Redis error; a Redis restart or a Sentinel failover
    must not stop the sweeps (they recover what such an event loses), so this starts it
    again, with the jobs due at once, until it is asked to stop."""
    while True:
        cron = CronScheduler(connection=redis_client.client, logging_level="INFO")
        for job in periodic_jobs(current_app.config):
            cron.register(job.func, queue_name=job.queue, args=job.args, interval=job.interval_s)
        try:
            cron.start()  # returns when stopped (SIGTERM, Ctrl-C)
            return
        except RedisError as exc:
            log.warning("scheduler lost Redis (%s); starting again in %s s", exc, SCHEDULER_RETRY_S)
            time.sleep(SCHEDULER_RETRY_S)
