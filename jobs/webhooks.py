"""RQ entry points for webhooks: retry unmatched events, backfill undelivered ones."""

from __future__ import annotations

import logging

from services import webhooks
from services.provider_clients import provider_for

log = logging.getLogger(__name__)


def retry_pending_webhooks_job() -> int:
    return webhooks.retry_pending_events()


def backfill_webhooks_job(provider: str) -> dict[str, int]:
    """Runs on the provider's own queue: it calls that provider's API."""
    events = provider_for(provider).undelivered_events()
    if events is None:
        return {}
    counts = webhooks.backfill(provider, events)
    if counts.get("applied") or counts.get("pending"):
        log.info("webhook backfill for %s: %s", provider, counts)
    return counts
