"""The shared breaker against real Redis: states, probes, leases, overrides, slow calls."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from redis import Redis

from config import breaker_settings
from resilience.breaker import BreakerConfig, CircuitBreaker, Verdict
from tests.clock_support import Clock

FAST = BreakerConfig(
    **breaker_settings(
        failure_threshold=3,
        window_s=10,
        min_calls=4,
        failure_rate=0.5,
        open_s=0.3,
        open_max_s=1.0,
        slow_call_s=0.5,
        probe_lease_s=0.5,
    )
)


def breaker(
    redis: Redis,
    config: BreakerConfig = FAST,
    provider: str = "stripe",
    clock: Clock | None = None,
) -> CircuitBreaker:
    return CircuitBreaker(redis, provider, config, clock_ms=clock)


def fail(b: CircuitBreaker, times: int) -> None:
    for _ in range(times):
        b.record(is_failure=True, duration_s=0.01)


def test_opens_after_consecutive_failures_and_rejects(redis: Redis) -> None:
    b = breaker(
        redis, BreakerConfig(**breaker_settings(failure_threshold=3, min_calls=100, open_s=5))
    )
    fail(b, 2)
    assert b.allow().verdict == Verdict.ALLOW
    b.record(is_failure=False, duration_s=0.01)  # a success resets the streak
    fail(b, 2)
    assert b.allow().verdict == Verdict.ALLOW
    fail(b, 1)
    decision = b.allow()
    assert decision.verdict == Verdict.REJECT and decision.retry_at_ms
    assert b.snapshot()["state"] == "open"
    assert b.snapshot()["rejected"] == 1


def test_opens_on_failure_rate_with_enough_calls(redis: Redis) -> None:
    b = breaker(
        redis,
        BreakerConfig(
            **breaker_settings(
                failure_threshold=100, min_calls=4, failure_rate=0.5, open_s=5, window_s=10
            )
        ),
    )
    for is_failure in (True, False, True):
        b.record(is_failure=is_failure, duration_s=0.01)
    assert b.snapshot()["state"] == "closed"  # 2/3 failed but only 3 calls
    b.record(is_failure=False, duration_s=0.01)  # 2/4 = 0.5
    assert b.snapshot()["state"] == "closed"
    b.record(is_failure=True, duration_s=0.01)  # 3/5
    assert b.snapshot()["state"] == "open"


def test_slow_calls_count_as_failures(redis: Redis) -> None:
    b = breaker(redis)
    for _ in range(3):
        b.record(is_failure=False, duration_s=0.9)  # succeeded, but slower than 0.5 s
    assert b.allow().verdict == Verdict.REJECT


def test_half_open_lets_exactly_one_probe_of_twenty(redis: Redis, clock: Clock) -> None:
    config = BreakerConfig(**breaker_settings(failure_threshold=1, open_s=0.2, probe_lease_s=5))
    b = breaker(redis, config, clock=clock)
    fail(b, 1)
    clock.advance(0.25)
    barrier = threading.Barrier(20, timeout=10)
    verdicts: list[Verdict] = []

    def call() -> None:
        own = CircuitBreaker(Redis.from_url(_url(redis)), "stripe", b.config, clock_ms=clock)
        barrier.wait()
        verdicts.append(own.allow().verdict)
        own.redis.close()

    threads = [threading.Thread(target=call) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert verdicts.count(Verdict.PROBE) == 1
    assert verdicts.count(Verdict.REJECT) == 19


def _url(redis: Redis) -> str:
    kwargs: dict[str, Any] = redis.connection_pool.connection_kwargs
    return f"redis://{kwargs['host']}:{kwargs['port']}/{kwargs.get('db', 0)}"


def test_probe_success_closes_and_failure_reopens_longer(redis: Redis, clock: Clock) -> None:
    b = breaker(redis, clock=clock)
    fail(b, 3)
    first_until = b.allow().retry_at_ms
    clock.advance(0.29)
    assert b.allow().verdict == Verdict.REJECT  # 0.3 s open: not yet
    clock.advance(0.01)
    probe = b.allow()
    assert probe.verdict == Verdict.PROBE
    assert b.record(is_failure=True, duration_s=0.01, token=probe.token) == "open"
    second = b.allow()
    assert second.verdict == Verdict.REJECT
    assert first_until and second.retry_at_ms
    snapshot = b.snapshot()
    # The second opening lasts twice as long as the first (0.3 s -> 0.6 s).
    assert snapshot["open_until_ms"] - snapshot["now_ms"] == 600
    assert snapshot["state"] == "open" and not snapshot["is_probe_in_flight"]
    clock.advance(0.6)
    assert b.snapshot()["state"] == "half_open"
    probe = b.allow()
    assert probe.verdict == Verdict.PROBE
    assert b.record(is_failure=False, duration_s=0.01, token=probe.token) == "closed"
    assert b.allow().verdict == Verdict.ALLOW


def test_open_duration_is_capped(redis: Redis, clock: Clock) -> None:
    config = BreakerConfig(
        **breaker_settings(failure_threshold=1, open_s=0.1, open_max_s=0.25, probe_lease_s=1)
    )
    b = breaker(redis, config, clock=clock)
    fail(b, 1)
    opened_for = []
    for _ in range(3):  # 0.1 -> 0.2 -> 0.25 (cap) -> 0.25
        snapshot = b.snapshot()
        opened_for.append(snapshot["open_until_ms"] - snapshot["now_ms"])
        clock.advance(0.3)
        probe = b.allow()
        assert probe.verdict == Verdict.PROBE
        b.record(is_failure=True, duration_s=0.01, token=probe.token)
    snapshot = b.snapshot()
    assert [*opened_for, snapshot["open_until_ms"] - snapshot["now_ms"]] == [100, 200, 250, 250]


def _probe_then_hang(url: str, config: BreakerConfig, now_ms: int, out: Any, release: Any) -> None:
    own = CircuitBreaker(Redis.from_url(url), "stripe", config, clock_ms=lambda: now_ms)
    out.put(own.allow().verdict.value)
    release.wait(60)  # "calling the provider" until it is killed


def test_a_killed_probers_lease_expires(redis: Redis, clock: Clock) -> None:
    import multiprocessing
    import os
    import signal

    b = breaker(redis, clock=clock)
    fail(b, 3)
    clock.advance(0.35)
    ctx = multiprocessing.get_context("spawn")
    out, release = ctx.Queue(), ctx.Event()
    prober = ctx.Process(
        target=_probe_then_hang, args=(_url(redis), FAST, clock.now_ms, out, release)
    )
    prober.start()
    try:
        assert out.get(timeout=30) == "probe"
        assert b.allow().verdict == Verdict.REJECT  # the probe is in flight
        assert b.snapshot()["is_probe_in_flight"]
        assert prober.pid is not None
        os.kill(prober.pid, signal.SIGKILL)  # the prober dies mid-call, never records
        prober.join(timeout=10)
        clock.advance(0.49)
        assert b.allow().verdict == Verdict.REJECT  # its 0.5 s lease still holds
        clock.advance(0.01)  # the lease runs out
        assert b.allow().verdict == Verdict.PROBE
    finally:
        if prober.is_alive():
            prober.kill()


def test_results_of_non_probes_while_half_open_are_ignored(redis: Redis, clock: Clock) -> None:
    b = breaker(redis, clock=clock)
    fail(b, 3)
    clock.advance(0.35)
    probe = b.allow()
    assert b.record(is_failure=False, duration_s=0.01) == "ignored"  # a late, older call
    assert b.record(is_failure=False, duration_s=0.01, token="forged") == "ignored"
    assert b.record(is_failure=False, duration_s=0.01, token=probe.token) == "closed"


def test_admin_overrides_are_audited(redis: Redis) -> None:
    b = breaker(redis)
    with pytest.raises(ValueError, match="reason"):
        b.force("open", actor="ops@example.com", reason=" ")
    b.force("open", actor="ops@example.com", reason="provider incident 42")
    assert b.allow().verdict == Verdict.REJECT
    assert b.snapshot()["state"] == "forced_open"
    b.force("closed", actor="ops@example.com", reason="maintenance over")
    fail(b, 10)
    assert b.allow().verdict == Verdict.ALLOW  # forced closed ignores failures
    assert b.snapshot()["state"] == "forced_closed"
    b.force("reset", actor="ops@example.com", reason="back to automatic")
    snapshot = b.snapshot()
    assert snapshot["state"] == "closed"
    assert [a.split(" ", 1)[1] for a in snapshot["audit"]] == [
        "reset by ops@example.com: back to automatic",
        "closed by ops@example.com: maintenance over",
        "open by ops@example.com: provider incident 42",
    ]


def test_breakers_are_per_provider(redis: Redis) -> None:
    fail(breaker(redis, provider="stripe"), 3)
    assert breaker(redis, provider="stripe").allow().verdict == Verdict.REJECT
    assert breaker(redis, provider="braintree").allow().verdict == Verdict.ALLOW


def test_a_fast_success_is_recorded_only_when_failures_are_in_the_window(
    redis: Redis, clock: Clock
) -> None:
    """The healthy path skips the record (one round trip); after a failure it must not,
    or a success would never end the streak."""
    config = BreakerConfig(**breaker_settings(failure_threshold=3, min_calls=100, window_s=10))
    b = breaker(redis, config, clock=clock)
    healthy = b.allow()
    assert healthy.needs_record is False
    assert b.record(is_failure=False, duration_s=0.01, needs_record=False) == "closed"
    fail(b, 2)
    after_failures = b.allow()
    assert after_failures.needs_record is True
    b.record(is_failure=False, duration_s=0.01, needs_record=after_failures.needs_record)
    assert b.snapshot()["consecutive_failures"] == 0  # the streak ended
    assert b.allow().needs_record is True  # its failures are still in the window
    clock.advance(11)
    assert b.allow().needs_record is False  # out of the window: the happy path again
    fail(b, 2)
    assert b.allow().verdict == Verdict.ALLOW  # two since the success: under three
