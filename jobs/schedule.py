"""Periodic jobs run by the scheduler program."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobs.payments import sweep_pending_payments_job, sweep_unknown_payments_job
from jobs.webhooks import backfill_webhooks_job, retry_pending_webhooks_job
from services.queues import MAINTENANCE_QUEUE, provider_queue_name


@dataclass(frozen=True)
class PeriodicJob:
    func: Callable[..., Any]
    queue: str
    interval_s: int
    args: tuple[Any, ...] = ()


def periodic_jobs(providers: list[str]) -> list[PeriodicJob]:
    """Sweeps run on the maintenance queue (they call no provider); each provider's
    backfill runs on that provider's queue (bulkhead)."""
    jobs = [
        PeriodicJob(sweep_pending_payments_job, MAINTENANCE_QUEUE, 30),
        PeriodicJob(sweep_unknown_payments_job, MAINTENANCE_QUEUE, 30),
        PeriodicJob(retry_pending_webhooks_job, MAINTENANCE_QUEUE, 30),
    ]
    jobs += [
        PeriodicJob(backfill_webhooks_job, provider_queue_name(p), 60, (p,)) for p in providers
    ]
    return jobs
