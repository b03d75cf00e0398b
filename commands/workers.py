"""`flask worker QUEUE` and `flask scheduler`: the RQ processes, each building its own app."""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import click
from flask import Flask, current_app
from flask.cli import with_appcontext
from redis.exceptions import RedisError
from rq import SimpleWorker, Worker
from rq.cron import CronScheduler
from rq.exceptions import StopRequested
from rq.executions import Execution
from rq.job import Job
from rq.queue import Queue
from rq.utils import now
from rq.worker import WorkerStatus

from commands.job_timeouts import SharedTimerDeathPenalty
from extensions import db, redis_client
from jobs.schedule import periodic_jobs
from services.platform.queues import every_queue_name
from settings import settings

log = logging.getLogger(__name__)
WORKER_MAINTENANCE_S = 30
REDIS_RETRY_S = 1.0  # the scheduler's and the workers' pause before trying Redis again
# While every slot is busy the worker still tells Redis it is alive this often (RQ's
# worker key lives 420 s; a dead worker's jobs are found by their own heartbeats).
SLOT_WAIT_S = 5.0
LOOP_CHECK_S = 1.0  # RQ's heartbeat and suspension check, at most this often (SparingLoopMixin)


class AppContextMixin:
    """Runs every job inside the Flask app context of the worker process (every worker
    class here, forking or not, has it: so it also holds what all of them spare RQ)."""

    flask_app: Flask
    queues: list[Queue]  # RQ's: the worker's own
    # The queues whose scheduled jobs (retries, backoffs) this worker's RQ scheduler moves
    # to their queue when due; None: its own (RQ's way).
    scheduled_queues: list[str] | None = None
    # RQ's third line per finished job, how long its result is kept (RQ's default, 500 s:
    # dropping it at once costs more, as RQ then deletes the job from every registry).
    log_result_lifespan = False

    def handle_execution_ended(self, job: Job, queue: Queue, heartbeat_ttl: int) -> None:
        """RQ beats a job that returned once more (a round trip) to keep it alive while
        its success or failure callback runs; a job without callbacks goes straight on
        to RQ's handling of its result, which takes it out of the started registry."""
        if job.success_callback is None and job.failure_callback is None:
            job.ended_at = now()
            return
        super().handle_execution_ended(job, queue, heartbeat_ttl)  # type: ignore[misc]  # RQ's Worker is untyped

    def _start_scheduler(self, *args: Any, **kwargs: Any) -> None:
        """RQ makes its scheduler for the worker's own queues (each queue's scheduled jobs
        are moved by whichever scheduler holds that queue's lock): here for
        `scheduled_queues` instead, when set."""
        own = self.queues
        if self.scheduled_queues is not None:
            self.queues = [
                Queue(name, connection=own[0].connection) for name in self.scheduled_queues
            ]
        try:
            super()._start_scheduler(*args, **kwargs)  # type: ignore[misc]  # RQ's Worker is untyped
        finally:
            self.queues = own

    def perform_job(self, job: Job, queue: Queue, *args: Any, **kwargs: Any) -> bool:
        with self.flask_app.app_context():
            try:
                return super().perform_job(job, queue, *args, **kwargs)  # type: ignore[misc]  # RQ's Worker is untyped
            finally:
                db.session.remove()


class SparingLoopMixin:
    """RQ's loop tells Redis the worker is alive three times around every job (three round
    trips each) and asks whether workers are suspended before each: at tens of jobs a
    second that was more Redis work than the jobs'. Here each happens at most once every
    LOOP_CHECK_S (the worker's key lives 420 s; `rq suspend` takes effect within a second).
    A heartbeat RQ sends with its own timeout or in a pipeline goes through unchanged.
    The worker's state is written when it changes: RQ writes it after every job and again
    before the next (a round trip each), mostly the same value."""

    _last_beat = 0.0
    _last_suspension_check = 0.0
    _state_written: str | None = None
    _state_lock = threading.Lock()  # one worker per process; its slots' threads share it

    def set_state(self, state: str, pipeline: Any = None) -> None:
        with self._state_lock:
            if pipeline is None and state == self._state_written:
                self._state = state
                return
            super().set_state(state, pipeline)  # type: ignore[misc]  # RQ's Worker is untyped
            self._state_written = state  # in a pipeline: as good as written (RQ's own)

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        if timeout is None and pipeline is None:
            at = time.monotonic()
            if at - self._last_beat < LOOP_CHECK_S:
                return
            self._last_beat = at
        super().heartbeat(timeout, pipeline)  # type: ignore[misc]  # RQ's Worker is untyped

    def check_for_suspension(self, burst: bool) -> None:
        at = time.monotonic()
        if at - self._last_suspension_check < LOOP_CHECK_S:
            return
        self._last_suspension_check = at
        super().check_for_suspension(burst)  # type: ignore[misc]  # RQ's Worker is untyped


class AppWorker(AppContextMixin, Worker):
    """Forks a work horse per job (`flask worker --fork`): a crashing job cannot kill the
    worker, at the price of a fork and a fresh database connection for every job."""

    def main_work_horse(self, *args: Any, **kwargs: Any) -> None:
        # Connections inherited through fork belong to the parent: never reuse them.
        with self.flask_app.app_context():
            db.engine.dispose(close=False)
        super().main_work_horse(*args, **kwargs)


class AppSimpleWorker(SparingLoopMixin, AppContextMixin, SimpleWorker):
    """Runs jobs in the worker process itself, reusing its pooled connections: the default.

    Jobs are short (one provider call within its budget); RQ still enforces the job
    timeout (SIGALRM), and a worker that dies is restarted by supervisor while the
    payment's lease and the sweeps recover its job. Measured by bench/reconcile_drain.py:
    about 4x the jobs per second of fork-per-job on the same machine.
    """


class AppThreadedWorker(SparingLoopMixin, AppContextMixin, SimpleWorker):
    """Runs up to `slots` jobs at once, each in a thread of this one process: a provider
    call spends its time waiting on a socket, so a thread (a few hundred kB) holds it as
    well as a process of its own (80-100 MB). The bulkhead of a provider is its slots.

    A job is taken from the queue only when a slot is free (never one waiting in hand).
    Each job keeps its RQ timeout: SIGALRM reaches only the main thread, so a timer
    raises JobTimeoutException in the job's thread instead (commands/job_timeouts.py; it
    lands once a blocking socket call returns, and every provider call has its own
    shorter budget). Each job has its own app context, so its own database session; a
    session holds a pooled connection only between its statements and the commit, never
    across a provider call (each step commits before it calls). On SIGTERM the worker
    takes no new job and waits for the jobs in flight (supervisor's stopwaitsecs is
    longer than a job's timeout); a second signal stops it at once, and leases and the
    sweeps recover whatever was cut."""

    death_penalty_class = SharedTimerDeathPenalty
    slots = 1

    def _setup_slots(self) -> None:
        if not hasattr(self, "_free"):
            self._free = threading.BoundedSemaphore(self.slots)
            self._pool = ThreadPoolExecutor(self.slots, thread_name_prefix=f"job-{self.name}")

    def dequeue_job_and_maintain_ttl(
        self, timeout: int | None, max_idle_time: int | None = None
    ) -> tuple[Job, Queue] | None:
        self._setup_slots()
        while not self._free.acquire(timeout=SLOT_WAIT_S):
            self.heartbeat()  # all slots busy: still alive
        try:
            result = super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)
        except BaseException:
            self._free.release()
            raise
        if result is None:
            self._free.release()
        return result

    def set_state(self, state: str, pipeline: Any = None) -> None:
        """Busy while a call or more is in the slots: RQ's loop says idle each time it
        waits for the next job (the dashboard and the drills read this)."""
        if state == WorkerStatus.IDLE and self.executions:
            state = WorkerStatus.BUSY
        super().set_state(state, pipeline)

    def execute_job(self, job: Job, queue: Queue) -> None:
        self._handing_over = True  # a stop now waits until the job is in its thread
        try:
            execution = self.prepare_execution(job)
            self._pool.submit(self._perform_in_slot, job, queue, execution)
        finally:
            self._handing_over = False

    def _perform_in_slot(self, job: Job, queue: Queue, execution: Execution) -> None:
        try:
            self.perform_job(job, queue, execution)
        finally:
            self.executions.pop(execution.id, None)
            if not self.executions:
                self.set_state(WorkerStatus.IDLE)
            self._free.release()

    def _shutdown(self) -> None:
        """A warm stop, busy or not: the loop takes no new job (a wait for a job or a
        slot ends at once), and teardown waits for the jobs in flight."""
        self._stop_requested = True
        self.set_shutdown_requested_date()
        if not getattr(self, "_handing_over", False):
            raise StopRequested()

    def teardown(self) -> None:
        if hasattr(self, "_pool"):
            self._pool.shutdown(wait=True)
        super().teardown()


def build_worker(
    app: Flask,
    queue_names: list[str],
    *,
    simple: bool = False,
    slots: int = 1,
    scheduled_queues: list[str] | None = None,
) -> Worker:
    cls: type[Any] = AppSimpleWorker if simple else AppWorker
    if slots > 1:
        cls = AppThreadedWorker
    # Maintenance also restarts RQ's scheduler when it died (Redis went away under it);
    # RQ's default of ten minutes would leave scheduled reconciliations waiting that long.
    worker: Any = cls(
        queue_names,
        connection=redis_client.client,
        maintenance_interval=WORKER_MAINTENANCE_S,
    )
    worker.flask_app = app
    worker.scheduled_queues = scheduled_queues
    if slots > 1:
        worker.slots = slots
    return worker


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
@click.option(
    "--schedules",
    type=click.Choice(["own", "every", "none"]),
    default="own",
    show_default=True,
    help="Whose scheduled jobs (retries, backoffs) this worker's RQ scheduler, a fork of "
    "it, moves to their queues when due: its own queues', every queue's, or none.",
)
@click.option(
    "--slots",
    type=click.IntRange(1, 512),
    default=1,
    show_default=True,
    help="Jobs run at once, each in a thread (a provider queue's bulkhead).",
)
@with_appcontext
def worker_command(
    queues: tuple[str, ...], fork: bool, burst: bool, schedules: str, slots: int
) -> None:
    """Work the given RQ queues (one provider queue per program in production)."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]  # werkzeug's LocalProxy is untyped
    if fork and slots > 1:
        raise click.UsageError("--fork runs one job at a time: it takes no --slots")

    def work() -> None:
        scheduled = sorted({*every_queue_name(), *queues}) if schedules == "every" else None
        worker = build_worker(  # asks Redis
            app, list(queues), simple=not fork, slots=slots, scheduled_queues=scheduled
        )
        worker.work(with_scheduler=schedules != "none", burst=burst, logging_level="INFO")

    # The app's objects, made once, are left out of the collector's passes: RQ forks its
    # scheduler (and a work horse per job with --fork), and a pass touching every object
    # copied their pages into each process. A provider worker and its scheduler: 148 ->
    # 116 MB PSS (private pages 63 + 53 -> 31 + 21 MB; bench/settle.py).
    gc.freeze()
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
