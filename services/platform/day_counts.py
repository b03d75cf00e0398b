"""Counts per UTC day in Redis for the dashboard (redeliveries, report mismatches): best
effort, as Redis may be down; kept three days."""

from __future__ import annotations

import logging

from redis.exceptions import RedisError

from extensions import redis_client
from models.types import utcnow

log = logging.getLogger(__name__)
KEPT_S = 3 * 24 * 3600
DUPLICATE_WEBHOOKS = "webhooks:duplicates"
REPORT_MISMATCHES = "reports:mismatches"


def day_key(name: str, day: str) -> str:
    return f"{name}:{day}"


def count_today(name: str) -> None:
    """Add one to today's count of `name` (a lost count is logged, never raised)."""
    try:
        key = day_key(name, utcnow().date().isoformat())
        pipe = redis_client.client.pipeline(transaction=False)
        pipe.incr(key)
        pipe.expire(key, KEPT_S)
        pipe.execute()
    except RedisError as exc:
        log.warning("could not count %s: %s", name, exc)


def today_counts(*names: str) -> list[int] | None:
    """Today's counts of `names` in one round trip; None when Redis cannot be asked."""
    day = utcnow().date().isoformat()
    try:
        raw = redis_client.client.mget([day_key(name, day) for name in names])
    except RedisError:
        return None
    return [int(value or 0) for value in raw]
