"""`flask worker QUEUE` and `flask scheduler`: the RQ processes, each building its own app."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
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
from settings import settings

log = logging.getLogger(__name__)
WORKER_MAINTENANCE_S = 30
REDIS_RETRY_S = 1.0  # the scheduler's and the workers' pause before trying Redis again


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


def run_through_redis_errors(name: str, run: Callable[[], None]) -> None:
    """Run an RQ loop; after a Redis error, start it again (from scratch) until it returns.

    RQ's worker survives a lost connection only while it waits for a job, and its
    scheduler not at all: anywhere else they exit. Exiting at each try of a long Redis
    outage or a Sentinel failover would use up supervisor's start retries and leave the
    queues with no worker and no sweeps when Redis is back (seen in the cluster drill)."""
    while True:
        try:
            run()
            return
        except RedisError as exc:
            log.warning("%s lost Redis (%s); starting again in %s s", name, exc, REDIS_RETRY_S)
            time.sleep(REDIS_RETRY_S)


@click.command("worker")
@click.argument("queues", nargs=-1, required=True)
@click.option("--fork", is_flag=True, help="Fork a work horse per job (RQ's default).")
@click.option("--burst", is_flag=True, help="Exit when the queues are empty.")
@with_appcontext
def worker_command(queues: tuple[str, ...], fork: bool, burst: bool) -> None:
    """Work the given RQ queues (one provider queue per program in production)."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]

    def work() -> None:
        worker = build_worker(app, list(queues), simple=not fork)  # asks Redis too
        worker.work(with_scheduler=True, burst=burst, logging_level="INFO")

    if burst:
        work()  # a burst reports a Redis error instead of waiting for Redis
    else:
        run_through_redis_errors("worker", work)


@click.command("scheduler")
@with_appcontext
def scheduler_command() -> None:
    """Enqueue the periodic jobs of jobs/schedule.py at their intervals, until stopped
    (SIGTERM, Ctrl-C); after a Redis error the jobs are due again at once."""

    def schedule() -> None:
        cron = CronScheduler(connection=redis_client.client, logging_level="INFO")
        for job in periodic_jobs(settings()):
            cron.register(job.func, queue_name=job.queue, args=job.args, interval=job.interval_s)
        cron.start()

    run_through_redis_errors("scheduler", schedule)
