"""RQ entry points for webhooks: apply recorded events, retry unmatched ones, backfill."""

from __future__ import annotations

import logging

from services.platform.provider_clients import gateway_for, provider_for
from services.webhooks import backfill, batches, events

log = logging.getLogger(__name__)


def apply_webhooks_job() -> str:
    """Apply the events the web requests recorded, a batch at a time (maintenance queue:
    it calls no provider)."""
    return batches.apply_waiting()


def apply_webhook_job(record_id: int) -> str:
    """A job an earlier version enqueued per event (still queued during a deploy): the
    same work, whatever its event."""
    return batches.apply_waiting()


def retry_pending_webhooks_job() -> int:
    return events.retry_pending_events()


def backfill_webhooks_job(provider: str) -> dict[str, int]:
    """Runs on the provider's own queue: it calls that provider's API."""
    counts = backfill.backfill_from(provider, provider_for(provider), gateway_for(provider)) or {}
    if counts.get("applied") or counts.get("pending"):
        log.info("webhook backfill for %s: %s", provider, counts)
    return counts
