"""The queues and the enqueueing of jobs. One queue per provider (a bulkhead: a slow
provider fills only its own), a maintenance queue, the notifications queue. Jobs are
enqueued after commit; Redis being down never loses work: the committed row is the
intent, and the sweeps enqueue it later (an outbox)."""

from __future__ import annotations

import logging
import time
import uuid
from datetime import UTC, datetime, timedelta

from redis.exceptions import RedisError
from rq import Queue
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.registry import ScheduledJobRegistry

from config import JOB_TIMEOUT_S
from extensions import per_app, redis_client
from services.platform import job_paths
from settings import settings

log = logging.getLogger(__name__)

QUEUE_PREFIX = "payments-"
MAINTENANCE_QUEUE = "maintenance"  # sweeps and other periodic jobs that call no provider
SWEEP_BATCH = 500  # rows per sweep run; the next run takes the rest


def provider_queue_name(provider: str) -> str:
    """The queue of one provider's jobs; matches the supervisor program exactly."""
    return f"{QUEUE_PREFIX}{provider}"


def every_queue_name() -> list[str]:
    """Every queue of this deployment: each enabled provider's, the emails', maintenance."""
    config = settings()
    providers = [provider_queue_name(p) for p in config.payments.providers]
    return [*providers, config.email.queue, MAINTENANCE_QUEUE]


def provider_queue(provider: str) -> Queue:
    return _queue(provider_queue_name(provider))


def named_queue(name: str) -> Queue:
    """Any other queue by name (the notifications bulkhead)."""
    return _queue(name)


def maintenance_queue() -> Queue:
    return _queue(MAINTENANCE_QUEUE)


def _queue(name: str) -> Queue:
    """The app's Queue of this name, made once (RQ's Queue holds no per-call state, and
    making one resolves its serializer and parses its timeout: per request, it showed)."""
    return per_app(
        "rq_queues",
        name,
        lambda: Queue(name, connection=redis_client.client, default_timeout=JOB_TIMEOUT_S),
    )


# Referenced by path so services never import jobs (jobs import services); a movement
# kind's own jobs and ids are its Kind's (services/movements/kinds.py).
APPLY_WEBHOOKS_JOB = job_paths.APPLY_WEBHOOKS
SCHEDULER_OVERDUE_S = 10  # RQ's scheduler moves due jobs every second
ACTIVE_STATUSES = {JobStatus.QUEUED, JobStatus.STARTED, JobStatus.SCHEDULED, JobStatus.DEFERRED}


def enqueue(
    provider: str,
    func: str,
    *args: object,
    job_id: str,
    delay_s: float | None = None,
    is_started_job_dead: bool = False,
    is_first: bool = False,
    queue_name: str | None = None,
    lease_lapsed: bool = False,
) -> bool:
    """Enqueue `func(*args)` on the provider's queue (or `queue_name`) unless a job with
    this id is already waiting or running.

    `is_started_job_dead`: the caller knows nobody works on the row (its lease is
    free), so a job still marked started past the job timeout belongs to a killed
    worker: replace it. (A job may be started with the lease free for a moment, right
    after it released the lease; such a job is left alone.)
    `lease_lapsed`: the row's lease was taken and ran out without being released, so
    the job that took it is dead, hung or cut off from us (a host that lost its network):
    a job still marked started is replaced at once, not after the job timeout. (Its late
    answer is harmless: the next job sends the same idempotency key, and a final state
    never moves back.)
    `is_first`: the row (a payment, refund, email) was just created, so no job can exist
    yet: skip the check.
    Returns False (and logs) when Redis is unreachable; the sweeps will retry.
    """
    try:
        queue = named_queue(queue_name) if queue_name else provider_queue(provider)
        existing: Job | None = None
        if not is_first:
            try:
                existing = Job.fetch(job_id, connection=redis_client.client)
            except NoSuchJobError:
                existing = None
        if existing is not None:
            # The status from the same read as started_at: a fresh status next to a stale
            # started_at made a job that started a moment ago look dead.
            status = existing.get_status(refresh=False)
            if (
                status == JobStatus.STARTED
                and is_started_job_dead
                and (lease_lapsed or _outlived(existing))
            ):
                log.warning(
                    "job %s %s died with its worker%s; enqueueing it again",
                    job_id,
                    args,
                    " or lost its lease" if lease_lapsed else "",
                )
                existing.delete()
            elif (
                status == JobStatus.SCHEDULED and is_started_job_dead and _overdue(existing, queue)
            ):
                log.warning(
                    "job %s %s is overdue (RQ scheduler down?); enqueueing it now",
                    job_id,
                    args,
                )
                existing.delete()
            elif (
                status == JobStatus.QUEUED
                and is_started_job_dead
                and queue.get_job_position(existing.id) is None
            ):
                # Marked queued but in no queue: a worker took it into RQ's intermediate
                # list and could not start it (Redis went away under it), so nobody will.
                log.warning(
                    "job %s %s was taken but never started; enqueueing it again",
                    job_id,
                    args,
                )
                existing.delete()
            elif status in ACTIVE_STATUSES:
                return True
        if delay_s:
            queue.enqueue_in(timedelta(seconds=delay_s), func, *args, job_id=job_id)
        else:
            _push(queue, func, [(args, job_id)])
        return True
    except RedisError as exc:
        log.warning(
            "could not enqueue %s %s on %s (Redis: %s); a sweep will retry",
            job_id,
            args,
            provider,
            exc,
        )
        return False


def _push(queue: Queue, func: str, jobs: list[tuple[tuple[object, ...], str]]) -> None:
    # One round trip: RQ alone sends the queue's registration and each job apart.
    with queue.connection.pipeline() as pipe:
        for args, job_id in jobs:
            queue.enqueue(func, *args, job_id=job_id, pipeline=pipe)
        pipe.execute()


# The doorbells: a batch job claims whatever rows wait (webhook events to apply, emails to
# send), so one waiting job is enough, however many rows come. A row committed rings:
# SET NX of the bell, and the job is enqueued only when the bell was not rung already.
# The job answers (deletes the bell) before it claims, so a row committed after the
# claim rings again: none waits without a job. A bell whose job was lost (Redis went
# away between the two, or the worker was killed before the job answered) lapses after
# BELL_TTL_S, so rows committed meanwhile wait that long at most for the next ring (the
# sweeps find them when none comes). A bell that lapses while its job still waits in a
# long queue lets one more job in: harmless, the batches claim with SKIP LOCKED.
BELL_TTL_S = 5
# The woken job waits this long before it answers: the rows committed meanwhile find the
# bell rung and ride in its batch. Fewer, fuller batches (each job costs RQ about 2 ms
# of CPU; 60 rows a second came in batches of one or two), for this much latency.
GATHER_S = 0.1
# Emails wait longer: a receipt a few tenths of a second later is the same receipt, and
# each batch also reads its rows' subjects (services/notifications/rendering.py).
EMAILS_GATHER_S = 0.3
WEBHOOKS_BELL, EMAILS_BELL = "bell:webhooks", "bell:emails"


def ring(queue: Queue, func: str, bell: str) -> bool:
    """Wake `func` (a job without arguments) on `queue` unless it is waiting already.
    False (logged) when Redis is unreachable: the sweeps take the rows."""
    try:
        if queue.connection.set(bell, 1, nx=True, ex=BELL_TTL_S):
            queue.enqueue(func, job_id=f"{bell.replace(':', '-')}-{uuid.uuid4().hex[:16]}")
        return True
    except RedisError as exc:
        log.warning(
            "could not ring %s on %s (Redis: %s); a sweep will find the rows", bell, queue.name, exc
        )
        return False


def answer(bell: str) -> None:
    """The woken job, before it claims: after GATHER_S (EMAILS_GATHER_S for the emails'
    bell; the rows committed meanwhile ride with it), rows committed from now on ring
    again."""
    time.sleep(EMAILS_GATHER_S if bell == EMAILS_BELL else GATHER_S)
    redis_client.client.delete(bell)


def ring_webhooks() -> bool:
    """Wake the application of recorded webhook events (maintenance queue)."""
    return ring(maintenance_queue(), APPLY_WEBHOOKS_JOB, WEBHOOKS_BELL)


def _overdue(job: Job, queue: Queue) -> bool:
    """Scheduled, but its time passed long ago: no scheduler is moving it to the queue.

    RQ's scheduler runs beside a worker and polls every second; if Redis goes away
    under it, it dies and the worker restarts it only at its next maintenance run.
    """
    try:
        due = ScheduledJobRegistry(queue=queue).get_scheduled_time(job)
    except NoSuchJobError:
        return True  # marked scheduled but in no registry: nothing will ever run it
    return (datetime.now(UTC) - due).total_seconds() > SCHEDULER_OVERDUE_S


def _outlived(job: Job) -> bool:
    """Started longer ago than any live job may run (RQ kills it at the job timeout)."""
    started = job.started_at
    if started is None:
        return True
    if started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    return (datetime.now(UTC) - started).total_seconds() > JOB_TIMEOUT_S + 5
