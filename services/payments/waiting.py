"""What a customer waiting on a pending payment is told about its provider: while the
provider's circuit breaker is open, their payment is queued (never sent into a provider
that is failing) and goes out when the breaker lets a probe through."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from redis.exceptions import RedisError

from models import Payment, PaymentStatus
from resilience.breaker import BreakerState
from services.platform.provider_clients import breaker_for

log = logging.getLogger(__name__)

PAUSED = (BreakerState.OPEN.value, BreakerState.FORCED_OPEN.value, BreakerState.HALF_OPEN.value)


@dataclass(frozen=True)
class ProviderPause:
    provider: str
    # When the payment is tried again: its own deferred send, else the breaker's next
    # probe; None while a person holds the breaker open (no one can say when).
    retry_at: datetime | None


def provider_pause(payment: Payment) -> ProviderPause | None:
    """The pause of a pending payment's provider, or None when it is not paused (or the
    payment is not pending, or Redis cannot say: the page then says what it always says)."""
    if payment.status != PaymentStatus.PENDING:
        return None
    try:
        snapshot = breaker_for(payment.provider).snapshot()
    except RedisError as exc:
        log.warning("breaker of %s unreadable for the status page: %s", payment.provider, exc)
        return None
    if snapshot["state"] not in PAUSED:
        return None
    if snapshot["state"] == BreakerState.FORCED_OPEN.value:
        return ProviderPause(payment.provider, None)
    until_ms = snapshot.get("open_until_ms")
    probe = datetime.fromtimestamp(until_ms / 1000, UTC) if until_ms else None
    candidates = [t for t in (payment.next_attempt_at, probe) if t is not None]
    return ProviderPause(payment.provider, max(candidates) if candidates else None)
