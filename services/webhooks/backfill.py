"""Backfill: the events a provider failed to deliver, fetched from its API page by page
and ingested through the same path as deliveries (so each applies once)."""

from __future__ import annotations

import functools
import logging
from contextlib import suppress
from typing import Any

from redis.exceptions import RedisError

from extensions import redis_client
from providers.base import Provider
from providers.events import WebhookError
from providers.outcomes import EventPage
from providers.registry import PROVIDERS
from resilience.gateway import CallContext, Gateway
from services.webhooks.events import ingest

log = logging.getLogger(__name__)

BACKFILL_PAGES_PER_RUN = 10  # 1,000 Stripe events per run; the next run resumes


def backfill_cursor_key(provider_name: str) -> str:
    return f"webhooks:backfill:cursor:{provider_name}"


def backfill_from(provider_name: str, client: Provider, gateway: Gateway) -> dict[str, int] | None:
    """Ingest the provider's undelivered events through the same path as deliveries, page
    by page, at most BACKFILL_PAGES_PER_RUN pages a run. A run that stops early leaves
    its cursor in Redis and the next run resumes there, so old undelivered events are
    reached too; the last page clears it. Every page is requested through the provider's
    gateway (an open circuit skips the run). None when the provider cannot be asked,
    or keeps no such list (its spec's `lists_undelivered_events`): then nothing is sent."""
    if not PROVIDERS[provider_name].lists_undelivered_events:
        return None
    key = backfill_cursor_key(provider_name)
    cursor = _read_cursor(key)
    counts: dict[str, int] = {}
    for _ in range(BACKFILL_PAGES_PER_RUN):
        page = gateway.call(
            CallContext("backfill"),
            functools.partial(client.undelivered_events, cursor),
            is_failure=lambda answer: answer is None,
        )
        if not isinstance(page, EventPage):  # no answer, or the circuit is open
            return counts or None
        for state, count in backfill(provider_name, page.events).items():
            counts[state] = counts.get(state, 0) + count
        cursor = page.next_cursor
        if cursor is None:
            break
    _write_cursor(key, cursor)
    return counts


def _read_cursor(key: str) -> str | None:
    try:
        raw = redis_client.client.get(key)
    except RedisError:
        return None  # start from the newest: nothing is lost, only walked again
    return raw.decode() if isinstance(raw, bytes) else raw


def _write_cursor(key: str, cursor: str | None) -> None:
    with suppress(RedisError):
        if cursor is None:
            redis_client.client.delete(key)
        else:
            redis_client.client.set(key, cursor, ex=24 * 3600)


def backfill(provider_name: str, events: list[dict[str, Any]]) -> dict[str, int]:
    """Ingest events fetched from the provider's API (one page) through the same path."""
    counts: dict[str, int] = {}
    parse = PROVIDERS[provider_name].webhook.parse
    for payload in events:
        try:
            event = parse(payload)
        except WebhookError as exc:
            log.warning("backfill: skipped a malformed %s event: %s", provider_name, exc)
            continue
        state = ingest(provider_name, event, payload, apply_now=True)
        counts[state] = counts.get(state, 0) + 1
    return counts
