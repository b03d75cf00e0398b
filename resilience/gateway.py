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
from datetime import UTC, datetime
from typing import TypeVar

from prometheus_client import Counter, Histogram
from redis.exceptions import RedisError

from providers.http import HttpExchange, traced
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
REQUEST_REFUSALS = Counter(
    "provider_request_refusals_total",
    "Requests the provider refused as ours, not the card's: 401/403 (our credentials) "
    "or an invalid request (our request's shape)",
    ["provider", "reason"],
)

CIRCUIT_OPEN = "circuit open"  # the reason of a call the open breaker refused


@dataclass(frozen=True)
class CallContext:
    """What a request is about, for the log line and the metrics."""

    operation: str  # charge | charge_lookup | refund | refund_replay | backfill | ...
    subject_id: int | None = None  # the row the call is about (a payment, a refund)
    idempotency_key: str | None = None
    attempt: int | None = None  # the row's send or lookup number, when it has one
    kind: str | None = None  # what the row is: its movement kind ("charge", "refund")


def _subject(context: CallContext) -> str | None:
    """ "refund 12": what a log line's call is about."""
    return f"{context.kind} {context.subject_id}" if context.kind else None


@dataclass(frozen=True)
class CallRecord:
    """One request through the gateway, as the call log keeps it (never a body)."""

    provider: str
    context: CallContext
    started_at: datetime
    duration_ms: float
    outcome: str  # the classified outcome: Succeeded, Declined, NotSent, Unknown, ...
    http_status: int | None  # the last answer's status; None when none came
    endpoint: str | None  # "POST /v1/payment_intents"
    request_id: str | None  # the provider's id of the request
    error: str | None  # the transport error or the reason, when no answer came
    # The last answer came from the provider's idempotency store: nothing ran anew.
    is_replayed: bool = False
    # The provider's clock less ours, from the last answer's Date (None: none came).
    clock_offset_s: float | None = None


Recorder = Callable[[CallRecord], None]
# Tells ops at once that the provider refuses our requests: (kind, dedupe key, detail);
# kind is "provider_key" (credentials refused) or "invalid_request" (our request's shape).
Alarm = Callable[[str, str, str], None]


class Gateway:
    """One provider's guarded path (one instance per provider and process)."""

    def __init__(
        self,
        provider: str,
        breaker: CircuitBreaker,
        recorder: Recorder | None = None,
        alarm: Alarm | None = None,
    ) -> None:
        self.provider = provider
        self.breaker = breaker
        self.recorder = recorder  # the call log (services/platform/call_log.py), after each call
        self.alarm = alarm  # the ops alert (services/platform/provider_clients.py)
        self._has_seen_auth_failure = False  # this process saw a 401/403 not yet cleared
        self._alarmed: set[str] = set()  # dedupe keys this process raised already

    def _admit(self) -> Decision:
        """Ask the shared breaker; if Redis is unreachable, let the call through."""
        try:
            decision = self.breaker.allow()
        except RedisError as exc:
            log.warning("breaker of %s unreachable (%s): calling without it", self.provider, exc)
            return Decision(Verdict.ALLOW)
        if not decision.is_allowed:
            BREAKER_REJECTIONS.labels(self.provider).inc()
        return decision

    def _admit_if_closed(self) -> Decision:
        """Let a call through a closed circuit only, without taking a probe; if Redis is
        unreachable, let it through (as `_admit`)."""
        try:
            is_closed = self.breaker.is_closed()
        except RedisError as exc:
            log.warning("breaker of %s unreachable (%s): calling without it", self.provider, exc)
            return Decision(Verdict.ALLOW, needs_record=False)
        return Decision(Verdict.ALLOW if is_closed else Verdict.REJECT, needs_record=False)

    def call(
        self,
        context: CallContext,
        request: Callable[[], T],
        *,
        before: Callable[[], object] | None = None,
        is_failure: Callable[[T], bool] = is_provider_failure,  # type: ignore[assignment]  # the default narrows the TypeVar
        recorder: Recorder | None = None,
        counts: bool = True,
    ) -> T | NotSent:
        """Admit, then call, in one step: a refused admission is NotSent with the breaker's
        retry time (safe to repeat later). `before` runs only once admitted and right
        before the request (e.g. record "may have been sent" and commit). The breaker
        hears of every admitted request, also of one that raised (a failure). `recorder`,
        when given, takes the call's record instead of the call log (a caller that writes
        it together with the outcome). `counts=False`: a call beside the movements (a
        card's fingerprint, a customer made) goes only through a closed circuit (else
        NotSent, taking no probe), and its answer is never the breaker's verdict: another
        endpoint answering says nothing of the one that hangs."""
        decision = self._admit() if counts else self._admit_if_closed()
        if not decision.is_allowed:
            return NotSent(
                CIRCUIT_OPEN, seconds_until(decision.retry_at_ms), is_provider_failure=False
            )
        if before is not None:
            before()  # raising here leaves a probe to its lease (probe_lease_s)
        traced()  # forget what this thread did before
        started_at, started = datetime.now(UTC), time.monotonic()
        result: T | None = None
        is_failed = True  # until the request returns: an exception is a failure
        exchanges: list[HttpExchange] = []
        try:
            result = request()
            is_failed = is_failure(result)
        finally:
            elapsed_s = time.monotonic() - started
            exchanges = traced()
            # An answer from the provider's idempotency store (a stored 500 replayed), or
            # its refusal of our own request (our key, our request's shape), says nothing
            # of its health now: neither a failure nor the half-open probe's verdict.
            is_neutral = bool(exchanges) and all(
                e.is_replayed or e.status in (401, 403) for e in exchanges
            )
            is_neutral = is_neutral or getattr(result, "is_request_error", False) is True
            is_neutral = is_neutral or not counts
            self._record(
                decision,
                is_failed=is_failed,
                elapsed_s=elapsed_s,
                is_neutral=is_neutral,
                what=_what_failed(context, result) if is_failed else "",
            )
        self._note_authentication(exchanges[-1].status if exchanges else None)
        if getattr(result, "is_request_error", False):
            self._note_request_error(context, result)
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
                "subject": _subject(context),
                "idempotency_key": context.idempotency_key,
            },
        )
        self._log_call(
            recorder or self.recorder, context, started_at, elapsed_s, outcome, exchanges, result
        )
        return result

    def _note_authentication(self, status: int | None) -> None:
        """A 401/403 puts the provider in "authentication failed" (dashboard, alert): its
        calls cannot work until someone fixes the key. An answer that is not a refusal
        clears it (cheaply: only a process that saw the refusal asks Redis to)."""
        try:
            if status in (401, 403):
                log.error("provider %s refused our credentials (%s)", self.provider, status)
                REQUEST_REFUSALS.labels(self.provider, f"http_{status}").inc()
                since_ms = self.breaker.note_authentication_failed(status)
                self._has_seen_auth_failure = True
                self._raise(
                    "provider_key",
                    f"key:{self.provider}:{since_ms}",  # one alert for the whole outage
                    f"{self.provider} answered {status} to our key: its calls cannot work "
                    "until the key is fixed",
                )
            elif status is not None and self._has_seen_auth_failure:
                self.breaker.clear_authentication_failed()
                self._has_seen_auth_failure = False
        except RedisError as exc:
            log.warning("breaker of %s unreachable (%s): auth state not kept", self.provider, exc)

    def _note_request_error(self, context: CallContext, result: object) -> None:
        """The provider refused our request's shape: counted, logged, alerted once an
        hour per operation and code (every payment fails the same way meanwhile)."""
        code = str(getattr(result, "code", "invalid_request"))[:64]
        message = str(getattr(result, "message", ""))[:200]
        REQUEST_REFUSALS.labels(self.provider, "invalid_request").inc()
        log.error(
            "provider %s refused our %s request (%s): %s",
            self.provider,
            context.operation,
            code,
            message,
            extra={"subject": _subject(context), "idempotency_key": context.idempotency_key},
        )
        hour = datetime.now(UTC).strftime("%Y-%m-%d %H")
        self._raise(
            "invalid_request",
            f"invalid_request:{self.provider}:{context.operation}:{code}:{hour}",
            f"{self.provider} refused our {context.operation} request as invalid ({code}: "
            f"{message}); {context.kind or 'request'} {context.subject_id} failed as 'could not "
            "be processed', "
            "and every such request will until it is fixed",
        )

    def _raise(self, kind: str, dedupe_key: str, detail: str) -> None:
        """Hand the alert on once per key and process (the alert itself is UNIQUE by key)."""
        if self.alarm is None or dedupe_key in self._alarmed:
            return
        self._alarmed.add(dedupe_key)
        try:
            self.alarm(kind, dedupe_key, detail)
        except Exception as exc:  # an alert must never break the call path
            log.warning("alert of %s not raised: %s", self.provider, exc)

    def _record(
        self,
        decision: Decision,
        *,
        is_failed: bool,
        elapsed_s: float,
        is_neutral: bool = False,
        what: str = "",
    ) -> None:
        try:
            self.breaker.record(
                is_failure=is_failed,
                duration_s=elapsed_s,
                token=decision.token,
                needs_record=decision.needs_record,
                is_neutral=is_neutral,
                what=what,
            )
        except RedisError as exc:
            log.warning("breaker of %s unreachable (%s): call not recorded", self.provider, exc)

    def _log_call(
        self,
        recorder: Recorder | None,
        context: CallContext,
        started_at: datetime,
        elapsed_s: float,
        outcome: str,
        exchanges: list[HttpExchange],
        result: object,
    ) -> None:
        if recorder is None:
            return
        last = exchanges[-1] if exchanges else None
        reason = getattr(result, "reason", None)
        record = CallRecord(
            self.provider,
            context,
            started_at,
            round(elapsed_s * 1000, 1),
            outcome,
            last.status if last else None,
            f"{last.method} {last.endpoint}" if last else None,
            last.request_id if last else None,
            None if last or not isinstance(reason, str) else reason[:500],
            last.is_replayed if last else False,
            last.clock_offset_s if last else None,
        )
        try:
            recorder(record)
        except Exception as exc:  # the log must never break the call path
            log.warning("call log of %s not written: %s", self.provider, exc)


def _what_failed(context: CallContext, result: object) -> str:
    """ "charge: Unknown (read timeout)": a call's outcome as the breaker's alert says it."""
    what = f"{context.operation}: {type(result).__name__ if result is not None else 'no answer'}"
    reason = getattr(result, "reason", None)
    return f"{what} ({reason})" if isinstance(reason, str) else what


def seconds_until(at_ms: int | None) -> float | None:
    """Seconds until a breaker's `retry_at_ms` (None when it gave none)."""
    if at_ms is None or at_ms < 0:
        return None
    return max(0.0, at_ms / 1000 - time.time())


def is_refused(outcome: object) -> bool:
    """Whether the open breaker refused the call (nothing was sent, nothing recorded)."""
    return isinstance(outcome, NotSent) and outcome.reason == CIRCUIT_OPEN
