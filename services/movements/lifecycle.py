"""The steps of the lifecycle every money movement sent to a provider shares (a charge,
a refund), which the engine (services/movements/engine.py) runs: the lease, "may have
been sent" recorded before the call, the deferral of a request provably not sent, the
next lookup with a growing delay and the escalation to review before the provider
forgets the key, what a lookup's answer means, and the count of answers that did not
match. A kind (services/movements/kinds.py) declares only what differs.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Protocol

from extensions import db
from models import TransitionSource
from models.types import utcnow
from providers.outcomes import Absent, NotSent
from resilience.gateway import is_refused
from services.movements.kinds import LOOKUP_JOB, SEND_JOB, Kind
from services.platform import day_counts, metrics, queues
from services.platform.provider_clients import provider_for
from settings import settings

FollowUp = Callable[[], object]


class Movement(Protocol):
    """The columns of a movement row the lifecycle reads and writes."""

    id: int
    provider: str
    first_sent_at: datetime | None
    last_sent_at: datetime | None
    send_count: int
    lease_expires_at: datetime | None
    next_attempt_at: datetime | None
    next_reconcile_at: datetime | None
    reconcile_attempts: int
    last_error: str | None


def nothing() -> None:
    return None


def lease_until(now: datetime) -> datetime:
    return now + timedelta(seconds=settings().payments.lease_s)


def mark_sending(row: Movement, now: datetime) -> datetime | None:
    """Record that a request may leave now (before the call, committed by the caller);
    returns the previous first_sent_at, for `unmark_sending`."""
    previous = row.first_sent_at
    row.first_sent_at = previous or now
    row.send_count += 1
    row.last_sent_at = now
    return previous


def unmark_sending(row: Movement, previous: datetime | None) -> None:
    """The request provably did not leave: undo `mark_sending`."""
    row.first_sent_at = previous
    row.send_count -= 1


def defer(kind: Kind, row: Movement, outcome: NotSent) -> FollowUp:
    """Send again later: after the provider's (or the open breaker's) retry time when it
    gave one, else SEND_DEFER_S; jittered so that deferred jobs do not return as a herd."""
    delay_s = outcome.retry_after_s or settings().payments.send_defer_s
    delay_s *= random.uniform(1.0, 1.3)
    now, previous = utcnow(), row.next_attempt_at
    # The job's id names the second it is due. RQ runs a scheduled job up to a second
    # early (its registry keeps whole seconds), so a deferred job that meets the open
    # breaker again can be told to come back within its own second: the same id as the
    # job still running, which the enqueue takes for the job already waiting, and the
    # send would be lost (until the janitor's sweep). The next one is due a second later.
    if previous is not None and int(now.timestamp() + delay_s) <= int(previous.timestamp()):
        delay_s = int(previous.timestamp()) + 1 - now.timestamp()
    row.next_attempt_at = now + timedelta(seconds=delay_s)
    row.last_error = outcome.reason[:500]
    row_id, provider = row.id, row.provider
    job_id = kind.send_job_id(row_id, f"-at-{int(row.next_attempt_at.timestamp())}")
    return lambda: enqueue_send(kind, provider, row_id, job_id=job_id, delay_s=delay_s)


def enqueue_send(kind: Kind, provider: str, row_id: int, **options: Any) -> bool:
    """Queue the row's send on its provider's queue (queues.enqueue's options; the job
    id is the kind's for the row unless `job_id` says otherwise)."""
    options.setdefault("job_id", kind.send_job_id(row_id))
    return queues.enqueue(provider, SEND_JOB, kind.name, row_id, **options)


def enqueue_lookup(kind: Kind, provider: str, row_id: int, **options: Any) -> bool:
    """Queue the row's lookup (queues.enqueue's options, `job_id` among them)."""
    return queues.enqueue(provider, LOOKUP_JOB, kind.name, row_id, **options)


def count_lookup(kind: Kind, row: Movement) -> None:
    """One more lookup of the row, committed before it is sent (a crash never spends
    the same attempt twice), and counted for /metrics by provider and kind."""
    row.reconcile_attempts += 1
    db.session.commit()
    metrics.RECONCILE_ATTEMPTS.labels(row.provider, kind.name).inc()


def key_deadline(row: Movement) -> datetime | None:
    """When the provider stops replaying the key (keyed providers): escalate before."""
    window_s = provider_for(row.provider).capabilities.replay_window_s
    if window_s is None or row.first_sent_at is None:
        return None
    return row.first_sent_at + timedelta(seconds=window_s)


def schedule_lookup(
    kind: Kind,
    row: Movement,
    *,
    delay_s: float | None = None,
    job_suffix: str = "",
) -> FollowUp:
    """Plan the next lookup with a growing delay (RECONCILE_DELAYS_S), or, once
    RECONCILE_MAX_ATTEMPTS are spent or the next one would come after the key's
    deadline, move the row to the kind's review with the reason."""
    config = settings().reconcile
    delays, attempts = config.delays_s, row.reconcile_attempts
    if delay_s is None:
        delay_s = delays[min(attempts, len(delays) - 1)]
    delay_s *= random.uniform(1.0, 1.2)
    due = utcnow() + timedelta(seconds=delay_s)
    deadline = key_deadline(row)
    if attempts >= config.max_attempts or (deadline is not None and due > deadline):
        # A provider without replayable keys (Braintree) has no deadline to name.
        forgets = (
            f"; the provider forgets the key at {deadline:%Y-%m-%d %H:%M} UTC" if deadline else ""
        )
        row.next_reconcile_at = None
        kind.move(
            row,
            kind.review,
            source=TransitionSource.RECONCILE,
            reason=f"{kind.noun} still unknown after {attempts} lookups{forgets}"
            f"; last answer: {row.last_error or 'none'}",
        )
        return nothing
    row.next_reconcile_at = due
    row_id, provider = row.id, row.provider
    job_id = kind.lookup_job_id(row_id, attempts, job_suffix)
    return lambda: enqueue_lookup(kind, provider, row_id, job_id=job_id, delay_s=delay_s)


def judge_lookup(kind: Kind, row: Any, outcome: object) -> FollowUp:
    """What a lookup's answer means, the same for every kind: refused (the circuit is
    open) while the row is unknown, ask again when the circuit may let us, without
    spending a lookup (still escalating in time); a strongly consistent read found
    nothing (a search that finds nothing never says Absent: its index lags), so it never
    happened, unless the provider had said it has it (a refund on its way): then a person
    looks; anything else is the kind's own reading of the answer (`kind.apply`)."""
    if is_refused(outcome) and row.status == kind.unknown:
        assert isinstance(outcome, NotSent)
        return schedule_lookup(
            kind,
            row,
            delay_s=outcome.retry_after_s or settings().payments.send_defer_s,
            job_suffix="-deferred",
        )
    if isinstance(outcome, Absent):
        had_it = row.status != kind.unknown
        kind.move(
            row,
            kind.review if had_it else kind.failed,
            source=TransitionSource.RECONCILE,
            reason=f"the provider had the {kind.row_noun}, now it has none: {outcome.reason}"
            if had_it
            else f"provider has no record of the {kind.row_noun}: {outcome.reason}",
        )
        return nothing
    return kind.apply(kind, row, outcome, TransitionSource.RECONCILE, row.first_sent_at)


def count_mismatch(provider: str, source: str) -> None:
    """An answer that did not match what we asked for: one metric and one daily count
    (the dashboard's) for every movement kind."""
    metrics.REPORT_MISMATCHES.labels(provider, source).inc()
    day_counts.count_today(day_counts.REPORT_MISMATCHES)
