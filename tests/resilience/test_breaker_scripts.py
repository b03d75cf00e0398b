"""The breaker's scripts on real Redis: a neutral answer (a stored one replayed, our own
request refused) is neither counted nor the half-open probe's verdict, and an outage keeps
its start and why it opened across the probe's reopenings."""

from __future__ import annotations

from redis import Redis

from config import breaker_settings
from resilience.breaker import BreakerConfig, CircuitBreaker, Verdict
from tests.clock_support import Clock

QUICK = BreakerConfig(
    **breaker_settings(failure_threshold=3, open_s=0.3, open_max_s=1.0, probe_lease_s=5)
)


def breaker(redis: Redis, clock: Clock) -> CircuitBreaker:
    return CircuitBreaker(redis, "stripe", QUICK, clock_ms=clock)


def fail(b: CircuitBreaker, times: int) -> None:
    for _ in range(times):
        b.record(is_failure=True, duration_s=0.01)


def test_a_neutral_probe_hands_the_probe_on_and_changes_nothing(redis: Redis, clock: Clock) -> None:
    b = breaker(redis, clock=clock)
    fail(b, 3)
    clock.advance(0.3)
    probe = b.allow()
    assert probe.verdict == Verdict.PROBE
    assert b.allow().verdict == Verdict.REJECT  # one probe at a time
    assert b.record(is_failure=True, duration_s=0.01, token=probe.token, is_neutral=True) == (
        "half_open"
    )
    after = b.allow()  # the next call probes at once, not after the probe's lease
    assert after.verdict == Verdict.PROBE
    assert b.record(is_failure=False, duration_s=0.01, token=after.token) == "closed"


def test_neutral_answers_are_not_counted_while_closed(redis: Redis, clock: Clock) -> None:
    b = breaker(redis, clock=clock)
    for _ in range(10):
        b.allow()
        b.record(is_failure=True, duration_s=0.01, is_neutral=True)
    snapshot = b.snapshot()
    assert (snapshot["state"], snapshot["window_calls"], snapshot["consecutive_failures"]) == (
        "closed",
        0,
        0,
    )


def test_an_outage_keeps_its_start_and_reason_until_it_closes(redis: Redis, clock: Clock) -> None:
    b = breaker(redis, clock=clock)
    for _ in range(3):
        b.record(is_failure=True, duration_s=0.01, what="charge: Unknown (read timeout)")
    opened = b.snapshot()
    assert opened["open_reason"] == "3 consecutive failures"
    assert opened["last_failure"] == "charge: Unknown (read timeout)"
    clock.advance(0.3)
    probe = b.allow()
    b.record(is_failure=True, duration_s=0.01, token=probe.token, what="lookup: Unknown")
    again = b.snapshot()
    assert again["outage_since_ms"] == opened["outage_since_ms"]  # the same outage
    assert again["open_reason"] == "probe failed"
    clock.advance(1.0)
    probe = b.allow()
    b.record(is_failure=False, duration_s=0.01, token=probe.token)
    closed = b.snapshot()
    assert closed["outage_since_ms"] is None and closed["open_reason"] is None


def test_a_call_beside_the_movements_is_never_the_probes_verdict(
    redis: Redis, clock: Clock
) -> None:
    """A card's fingerprint read (`counts=False`) answering while charges hang: as the
    half-open probe it neither closes the circuit nor keeps the probe."""
    from providers.outcomes import NotSent
    from resilience.gateway import CallContext, Gateway

    b = breaker(redis, clock)
    fail(b, 3)
    clock.advance(0.3)
    gateway = Gateway("stripe", b)
    answered = gateway.call(CallContext("card_check"), lambda: "fp_1", counts=False)
    assert isinstance(answered, NotSent)  # not sent: the circuit is not closed
    snapshot = b.snapshot()
    assert (snapshot["state"], snapshot["probes"]) == ("half_open", 0)  # no probe taken
    assert b.allow().verdict == Verdict.PROBE  # the next call probes
    closed = breaker(redis, clock)
    closed.force("reset", actor="test", reason="a closed circuit")
    assert (
        Gateway("stripe", closed).call(CallContext("card_check"), lambda: "fp", counts=False)
        == "fp"
    )
