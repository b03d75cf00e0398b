"""A circuit breaker per provider whose state lives in Redis, shared by every worker.

Every operation is one Lua script (one round trip, Redis server time, no
read-then-write from Python), so fifty workers on ten hosts agree on one state:

- closed: calls pass; it opens after `failure_threshold` consecutive failures, or
  when the failure rate over the sliding `window_s` reaches `failure_rate` with
  at least `min_calls` calls;
- open: calls are rejected until `open_until`; each opening lasts longer
  (`open_s` doubled per consecutive opening, capped at `open_max_s`);
- half-open: exactly one caller in the whole cluster is the probe, under a lease
  that expires if the prober dies (`probe_lease_s`, longer than a provider
  call's total budget); its success closes the circuit, its failure reopens it.

Admin overrides (forced open, forced closed, reset) are stored in Redis too.

When Redis itself is unreachable, `allow()` raises RedisError and the callers
let the call through (fail open): a worker that cannot reach Redis cannot
dequeue jobs either, so this only matters for a job already running, and the
provider's own timeouts still bound it. The web tier never consults the breaker.
"""

from __future__ import annotations

import enum
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from redis import Redis

from resilience.breaker_scripts import ALLOW, OVERRIDE, RECORD

log = logging.getLogger(__name__)


class BreakerState(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"
    FORCED_OPEN = "forced_open"
    FORCED_CLOSED = "forced_closed"


class Verdict(enum.StrEnum):
    ALLOW = "allow"
    REJECT = "reject"
    PROBE = "probe"


@dataclass(frozen=True)
class BreakerConfig:
    """One provider's breaker settings; their defaults and meaning: config.py
    (BREAKER_DEFAULTS, BREAKER_PROBE_LEASE_S)."""

    failure_threshold: float
    window_s: float
    min_calls: float
    failure_rate: float
    open_s: float
    open_max_s: float
    slow_call_s: float
    probe_lease_s: float


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    retry_at_ms: int | None = None  # when a rejected caller may try again (Redis time)
    token: str | None = None  # the probe's token, to be passed to record()
    # False on the healthy path: a fast success then changes nothing and is not sent.
    needs_record: bool = True

    @property
    def is_allowed(self) -> bool:
        return self.verdict != Verdict.REJECT


AUTH_FAILED_TTL_S = 900  # an authentication failure is forgotten 15 min after the last one


class CircuitBreaker:
    """The breaker of one provider; cheap to construct (it holds no state of its own)."""

    def __init__(
        self,
        redis: Redis,
        provider: str,
        config: BreakerConfig,
        *,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self.redis = redis
        self.provider = provider
        self.config = config
        # None: Redis' TIME, one clock for every process. Tests pass their own.
        self.clock_ms = clock_ms
        prefix = f"breaker:{{{provider}}}"  # one hash slot per provider (Redis Cluster)
        self.keys = [
            f"{prefix}:state",
            f"{prefix}:calls",
            f"{prefix}:failures",
            f"{prefix}:log",
            f"{prefix}:audit",
        ]
        self.auth_key = f"{prefix}:auth_failed"  # the provider refused our credentials
        self._allow = redis.register_script(ALLOW)
        self._record = redis.register_script(RECORD)
        self._override = redis.register_script(OVERRIDE)

    def allow(self) -> Decision:
        """Allow, reject until a time, or make the caller the half-open probe."""
        token = secrets.token_hex(8)
        verdict, until, needs_record = self._allow(
            keys=self.keys[:4],
            args=[
                token,
                int(self.config.probe_lease_s * 1000),
                int(self.config.window_s * 1000),
                self._clock(),
            ],
        )
        decision = Decision(
            Verdict(_text(verdict)),
            int(until) if int(until) > 0 else None,
            token if _text(verdict) == "probe" else None,
            bool(needs_record),
        )
        if decision.verdict == Verdict.REJECT:
            log.info("breaker %s rejected a call (open until %s)", self.provider, until)
        elif decision.verdict == Verdict.PROBE:
            log.warning("breaker %s is half-open: this call is the probe", self.provider)
        return decision

    def record(
        self,
        *,
        is_failure: bool,
        duration_s: float,
        token: str | None = None,
        needs_record: bool = True,
        is_neutral: bool = False,
        what: str = "",
    ) -> str:
        """Record a call's result; returns the state afterwards (closed/open/half_open/
        ignored/forced).

        Pass the decision's `needs_record`: a fast success on the healthy path then
        is not sent to Redis at all (the happy path costs one round trip in all).
        `is_neutral`: the answer says nothing of the provider's health now (its store
        replayed an old answer): neither counted nor the half-open probe's verdict, whose
        lease passes to the next call. `what`: what failed, kept for the alert.
        """
        if is_neutral and token is None:
            return "ignored"  # nothing to count, no probe to hand on
        is_slow = not is_failure and not is_neutral and duration_s > self.config.slow_call_s
        is_failure = is_failure or is_slow
        if not is_failure and not is_neutral and not needs_record:
            return "closed"
        if is_slow:
            what = f"a call took {duration_s:.1f} s"
        c = self.config
        result = _text(
            self._record(
                keys=self.keys[:4],
                args=[
                    "n" if is_neutral else "1" if is_failure else "0",
                    token or "",
                    int(c.window_s * 1000),
                    c.failure_threshold,
                    c.min_calls,
                    c.failure_rate,
                    int(c.open_s * 1000),
                    int(c.open_max_s * 1000),
                    secrets.token_hex(8),
                    what[:200],
                    self._clock(),
                ],
            )
        )
        if result == "open":
            log.warning(
                "breaker %s opened after a %s call (%.2f s)",
                self.provider,
                "slow" if is_slow else "failed",
                duration_s,
            )
        elif result == "closed" and token:
            log.warning("breaker %s closed: the probe succeeded", self.provider)
        return result

    def is_closed(self) -> bool:
        """Whether calls pass without a probe now (closed, or forced closed); one read."""
        forced, state = self.redis.hmget(self.keys[0], "forced", "state")
        if forced is not None:
            return _text(forced) == "closed"
        return state is None or _text(state) == "closed"

    def force(self, action: str, *, actor: str, reason: str) -> str:
        """Admin override: 'open', 'closed' or 'reset'; audited in Redis (who, why)."""
        if action not in ("open", "closed", "reset"):
            raise ValueError("action must be 'open', 'closed' or 'reset'")
        if not reason.strip():
            raise ValueError("a reason is required")
        text = f"{action} by {actor}: {reason.strip()[:200]}"
        log.warning("breaker %s %s", self.provider, text)
        return _text(self._override(keys=self.keys, args=[action, text, self._clock()]))

    def _clock(self) -> str:
        return "" if self.clock_ms is None else str(int(self.clock_ms()))

    def note_authentication_failed(self, status: int) -> int:
        """The provider refused our credentials (401/403): shown and alerted on until a
        later call is accepted or AUTH_FAILED_TTL_S passes without another refusal.
        Returns when this outage began (unix ms), the same for every process."""
        now_ms = int(time.time() * 1000)
        pipe = self.redis.pipeline()
        pipe.set(self.auth_key, f"{status} {now_ms}", ex=AUTH_FAILED_TTL_S, nx=True)
        pipe.expire(self.auth_key, AUTH_FAILED_TTL_S)
        pipe.get(self.auth_key)
        kept = _auth_failed(pipe.execute()[2])
        return kept["at_ms"] if kept else now_ms

    def clear_authentication_failed(self) -> None:
        self.redis.delete(self.auth_key)

    def snapshot(self) -> dict[str, Any]:
        """The breaker as the dashboard shows it (one pipeline round trip)."""
        pipe = self.redis.pipeline()
        pipe.hgetall(self.keys[0])
        pipe.zcard(self.keys[1])
        pipe.zcard(self.keys[2])
        pipe.lrange(self.keys[3], 0, 9)
        pipe.lrange(self.keys[4], 0, 9)
        pipe.time()
        pipe.get(self.auth_key)
        raw, calls, failures, events, audit, (seconds, micros), auth = pipe.execute()
        fields = {_text(k): _text(v) for k, v in raw.items()}
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        if self.clock_ms is not None:
            now_ms = int(self.clock_ms())
        state = BreakerState(fields.get("state", "closed"))
        if fields.get("forced") == "open":
            state = BreakerState.FORCED_OPEN
        elif fields.get("forced") == "closed":
            state = BreakerState.FORCED_CLOSED
        elif state == BreakerState.OPEN and now_ms >= int(fields.get("open_until", 0)):
            state = BreakerState.HALF_OPEN  # the next caller will probe
        lease = int(fields.get("probe_lease_until", 0))
        return {
            "provider": self.provider,
            "state": state.value,
            "consecutive_failures": int(fields.get("consecutive_failures", 0)),
            "window_calls": calls,
            "window_failures": failures,
            "failure_rate": round(failures / calls, 3) if calls else 0.0,
            "open_until_ms": int(fields["open_until"]) if "open_until" in fields else None,
            "is_probe_in_flight": now_ms < lease,
            "rejected": int(fields.get("rejected", 0)),
            "probes": int(fields.get("probes", 0)),
            # The outage's first opening (unix ms; None while closed): names it, once.
            "outage_since_ms": int(fields["outage_since"]) if "outage_since" in fields else None,
            "open_reason": fields.get("open_reason"),
            "last_failure": fields.get("last_failure"),
            "transitions": int(fields.get("transitions", 0)),
            "recent_events": [_text(e) for e in events],
            "audit": [_text(a) for a in audit],
            "now_ms": now_ms,
            "auth_failed": _auth_failed(auth),
        }


def _auth_failed(raw: Any) -> dict[str, int] | None:
    """{"status", "at_ms"} of the provider's last refusal of our credentials, or None."""
    if raw is None:
        return None
    status, _, at_ms = _text(raw).partition(" ")
    return (
        {"status": int(status), "at_ms": int(at_ms)}
        if status.isdigit() and at_ms.isdigit()
        else None
    )


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
