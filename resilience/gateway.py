"""The one guarded path of every provider request: charge, lookup, re-send, backfill
(and whatever later operations add). Each request is admitted by the provider's
shared breaker, timed, recorded (a failure, or a call slower than the breaker's
slow-call limit, counts against it), counted in metrics and logged with the payment's
id, idempotency key and provider. Provider-agnostic: it knows no Flask and no database.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from prometheus_client import Counter, Histogram
from redis.exceptions import RedisError

from providers.outcomes import NotSent, is_provider_failure
from resilience.breaker import CircuitBreaker, Decision, Verdict

log = logging.getLogger(__name__)
T = TypeVar("T")

PROVIDER_CALLS = Counter(
    "provider_calls_total",
    "Provider calls by provider and outcome",
    ["provider", "call", "outcome"],
)
PROVIDER_LATENCY = Histogram(
    "provider_call_seconds",
    "Provider call latency",
    ["provider"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30),
)
BREAKER_REJECTIONS = Counter(
    "breaker_rejections_total", "Calls refused by an open circuit", ["provider"]
)


@dataclass(frozen=True)
class CallContext:
    """What a request is about, for the log line and the metrics."""

    operation: str  # charge | lookup | resend | backfill | ...
    payment_id: int | None = None
    idempotency_key: str | None = None


class Gateway:
    """One provider's guarded path (one instance per provider and process)."""

    def __init__(self, provider: str, breaker: CircuitBreaker) -> None:
        self.provider = provider
        self.breaker = breaker

    def admit(self) -> Decision:
        """Ask the shared breaker; if Redis is unreachable, let the call through."""
        try:
            decision = self.breaker.allow()
        except RedisError as exc:
            log.warning("breaker of %s unreachable (%s): calling without it", self.provider, exc)
            return Decision(Verdict.ALLOW)
        if not decision.is_allowed:
            BREAKER_REJECTIONS.labels(self.provider).inc()
        return decision

    def call(
        self,
        decision: Decision,
        context: CallContext,
        request: Callable[[], T],
        is_failure: Callable[[T], bool] = is_provider_failure,  # type: ignore[assignment]
    ) -> T:
        """Make an admitted request and tell the breaker, metrics and log how it went."""
        started = time.monotonic()
        result = request()
        elapsed_s = time.monotonic() - started
        is_failed = is_failure(result)
        outcome = type(result).__name__ if result is not None else "NoAnswer"
        PROVIDER_CALLS.labels(self.provider, context.operation, outcome).inc()
        PROVIDER_LATENCY.labels(self.provider).observe(elapsed_s)
        log.info(
            "provider %s %s: %s in %.3f s",
            self.provider,
            context.operation,
            outcome,
            elapsed_s,
            extra={
                "provider": self.provider,
                "payment_id": context.payment_id,
                "idempotency_key": context.idempotency_key,
            },
        )
        try:
            self.breaker.record(
                is_failure=is_failed,
                duration_s=elapsed_s,
                token=decision.token,
                needs_record=decision.needs_record,
            )
        except RedisError as exc:
            log.warning("breaker of %s unreachable (%s): call not recorded", self.provider, exc)
        return result

    def guarded(
        self,
        context: CallContext,
        request: Callable[[], T],
        is_failure: Callable[[T], bool] = is_provider_failure,  # type: ignore[assignment]
    ) -> T | NotSent:
        """Admit, then call; a refused admission is NotSent (safe to repeat later)."""
        decision = self.admit()
        if not decision.is_allowed:
            return NotSent(
                "circuit open", seconds_until(decision.retry_at_ms), is_provider_failure=False
            )
        return self.call(decision, context, request, is_failure)


def seconds_until(at_ms: int | None) -> float | None:
    """Seconds until a breaker's `retry_at_ms` (None when it gave none)."""
    if at_ms is None or at_ms < 0:
        return None
    return max(0.0, at_ms / 1000 - time.time())
