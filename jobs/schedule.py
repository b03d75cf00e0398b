"""Periodic jobs run by the scheduler program."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobs.books import reconcile_books_job
from jobs.movements import sweep_job
from jobs.notifications import check_alerts_job, sweep_outbox_job
from jobs.payments import retention_job, sample_health_job, sweep_abandoned_payments_job
from jobs.webhooks import backfill_webhooks_job, retry_pending_webhooks_job
from providers.registry import spec_for
from services.platform.queues import MAINTENANCE_QUEUE, provider_queue_name
from services.statements.reconcile import BALANCE_PROVIDERS
from settings import Settings


@dataclass(frozen=True)
class PeriodicJob:
    func: Callable[..., Any]
    queue: str
    interval_s: int
    args: tuple[Any, ...] = ()


def periodic_jobs(config: Settings) -> list[PeriodicJob]:
    """Sweeps run on the maintenance queue (they call no provider); each provider's
    backfill and books reconciliation run on that provider's queue (bulkhead).
    Intervals are settings."""
    sweep_s, retry_s = config.housekeeping.sweep_interval_s, config.webhooks.retry_interval_s
    jobs = [
        PeriodicJob(sweep_job, MAINTENANCE_QUEUE, sweep_s),
        PeriodicJob(sweep_abandoned_payments_job, MAINTENANCE_QUEUE, sweep_s),
        PeriodicJob(sweep_outbox_job, MAINTENANCE_QUEUE, sweep_s),
        PeriodicJob(retention_job, MAINTENANCE_QUEUE, 3600),
        PeriodicJob(sample_health_job, MAINTENANCE_QUEUE, sweep_s),
        PeriodicJob(check_alerts_job, MAINTENANCE_QUEUE, sweep_s),
        PeriodicJob(retry_pending_webhooks_job, MAINTENANCE_QUEUE, retry_s),
    ]
    jobs += [
        PeriodicJob(
            backfill_webhooks_job, provider_queue_name(p), config.webhooks.backfill_interval_s, (p,)
        )
        for p in config.payments.providers
        if spec_for(p).lists_undelivered_events
    ]
    jobs += [
        PeriodicJob(
            reconcile_books_job, provider_queue_name(p), config.housekeeping.books_interval_s, (p,)
        )
        for p in config.payments.providers
        if p in BALANCE_PROVIDERS
    ]
    return jobs
