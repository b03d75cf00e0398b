"""What the breaker tells: its snapshot (the dashboard's), its decisions, its log lines,
its overrides' audit, the provider's refusal of our credentials, and the exact edges of
its durations (open, window, probe lease, slow call), on a test clock."""

from __future__ import annotations

import logging

import pytest
from redis import Redis

from config import breaker_settings
from resilience.breaker import AUTH_FAILED_TTL_S, BreakerConfig, CircuitBreaker, Decision, Verdict
from tests.clock_support import Clock

# Durations long enough that a unit slip (x1001 instead of x1000) shows in milliseconds.
SLOW = BreakerConfig(
    **breaker_settings(
        failure_threshold=2,
        window_s=60,
        min_calls=100,
        failure_rate=0.9,
        open_s=10,
        open_max_s=40,
        slow_call_s=0.5,
        probe_lease_s=10,
    )
)


def _breaker(redis: Redis, clock: Clock | None, config: BreakerConfig = SLOW) -> CircuitBreaker:
    return CircuitBreaker(redis, "stripe", config, clock_ms=clock)


def _open(b: CircuitBreaker) -> None:
    for _ in range(int(b.config.failure_threshold)):
        b.record(is_failure=True, duration_s=0.01)


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "resilience.breaker"]


def test_a_fresh_breakers_snapshot(redis: Redis, clock: Clock) -> None:
    assert _breaker(redis, clock).snapshot() == {
        "provider": "stripe",
        "state": "closed",
        "consecutive_failures": 0,
        "window_calls": 0,
        "window_failures": 0,
        "failure_rate": 0.0,
        "open_until_ms": None,
        "is_probe_in_flight": False,
        "rejected": 0,
        "probes": 0,
        "outage_since_ms": None,
        "open_reason": None,
        "last_failure": None,
        "transitions": 0,
        "recent_events": [],
        "audit": [],
        "now_ms": clock.now_ms,
        "auth_failed": None,
    }


def test_the_snapshot_counts_the_window_and_the_open_circuit(redis: Redis, clock: Clock) -> None:
    b = _breaker(redis, clock)
    b.record(is_failure=False, duration_s=0.01)
    b.record(is_failure=True, duration_s=0.01)
    b.record(is_failure=False, duration_s=0.01)
    partial = b.snapshot()
    assert (partial["window_calls"], partial["window_failures"]) == (3, 1)
    assert (partial["failure_rate"], partial["consecutive_failures"]) == (0.333, 0)
    b.record(is_failure=True, duration_s=0.01)
    assert b.snapshot()["consecutive_failures"] == 1
    b.record(is_failure=True, duration_s=0.01)  # the threshold: open for 10 s
    assert b.allow() == Decision(Verdict.REJECT, clock.now_ms + 10_000, None, False)
    opened = b.snapshot()
    assert (opened["state"], opened["open_until_ms"]) == ("open", clock.now_ms + 10_000)
    assert (opened["rejected"], opened["transitions"], opened["probes"]) == (1, 1, 0)
    assert opened["recent_events"] == [f"{clock.now_ms} open 10000ms: 2 consecutive failures"]
    clock.advance(10)
    assert b.snapshot()["state"] == "half_open"  # shown as the next caller will find it
    probe = b.allow()
    assert (
        probe.verdict == Verdict.PROBE
        and probe.token
        and probe.retry_at_ms == (clock.now_ms + 10_000)
    )
    probing = b.snapshot()
    assert (probing["probes"], probing["is_probe_in_flight"]) == (1, True)
    assert probing["transitions"] == 2 and probing["recent_events"][0].endswith(" half_open")


def test_recent_events_are_the_ten_newest(redis: Redis, clock: Clock) -> None:
    b = _breaker(redis, clock)
    for number in range(12):
        b.force("open" if number % 2 else "closed", actor="ops", reason=f"step {number}")
        clock.advance(1)
    snapshot = b.snapshot()
    assert [e.split(" ", 1)[1] for e in snapshot["recent_events"]] == [
        f"forced {'open' if n % 2 else 'closed'}" for n in range(11, 1, -1)
    ]
    assert [a.split(" ", 1)[1] for a in snapshot["audit"]] == [
        f"{'open' if n % 2 else 'closed'} by ops: step {n}" for n in range(11, 1, -1)
    ]


def test_the_snapshot_reads_redis_time_without_a_test_clock(redis: Redis) -> None:
    before_s, before_us = redis.time()
    now_ms = _breaker(redis, None).snapshot()["now_ms"]
    after_s, after_us = redis.time()
    assert isinstance(now_ms, int)
    assert before_s * 1000 + before_us // 1000 <= now_ms <= after_s * 1000 + after_us // 1000


def test_a_probe_lease_ends_at_its_millisecond(redis: Redis, clock: Clock) -> None:
    b = _breaker(redis, clock)
    _open(b)
    clock.advance(10)
    assert b.allow().verdict == Verdict.PROBE
    clock.advance(9.999)
    assert b.snapshot()["is_probe_in_flight"] is True
    clock.advance(0.001)  # the lease (10 s) is over
    assert b.snapshot()["is_probe_in_flight"] is False
    assert b.allow().verdict == Verdict.PROBE  # another caller takes the probe


def test_a_call_leaves_the_window_at_its_millisecond(redis: Redis, clock: Clock) -> None:
    b = _breaker(redis, clock)
    b.record(is_failure=True, duration_s=0.01)
    b.record(is_failure=False, duration_s=0.01)  # the streak ends; the failure stays in
    clock.advance(59.999)
    assert b.allow().needs_record is True  # a failure in the window: record successes
    clock.advance(0.002)  # 60 s on: the failure has left the window
    assert b.allow().needs_record is False
    b.record(is_failure=False, duration_s=0.01)
    assert (b.snapshot()["window_calls"], b.snapshot()["window_failures"]) == (1, 0)


def test_a_closed_breaker_allows_with_no_time_and_no_token(redis: Redis, clock: Clock) -> None:
    assert _breaker(redis, clock).allow() == Decision(Verdict.ALLOW, None, None, False)


def test_a_call_as_slow_as_the_limit_is_not_slow(redis: Redis, clock: Clock) -> None:
    b = _breaker(redis, clock)
    for _ in range(3):
        assert b.record(is_failure=False, duration_s=0.5) == "closed"
    assert b.snapshot()["window_failures"] == 0
    assert b.record(is_failure=False, duration_s=0.51) == "closed"
    assert b.snapshot()["consecutive_failures"] == 1  # slower: a failure


def test_a_failure_is_recorded_even_when_the_healthy_path_said_no_record_was_needed(
    redis: Redis, clock: Clock
) -> None:
    b = _breaker(redis, clock)
    assert not b.allow().needs_record
    b.record(is_failure=True, duration_s=0.01, needs_record=False)
    assert b.snapshot()["consecutive_failures"] == 1


def test_the_breaker_says_what_it_does(
    redis: Redis, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="resilience.breaker")
    b = _breaker(redis, clock)
    b.record(is_failure=True, duration_s=0.01)
    b.record(is_failure=False, duration_s=0.01)  # not a probe: no "closed" line
    b.record(is_failure=False, duration_s=0.7)  # slow
    assert b.record(is_failure=True, duration_s=0.25) == "open"
    b.allow()
    clock.advance(10)
    probe = b.allow()
    b.record(is_failure=False, duration_s=0.01, token=probe.token)
    assert _lines(caplog) == [
        "breaker stripe opened after a failed call (0.25 s)",
        f"breaker stripe rejected a call (open until {clock.now_ms})",
        "breaker stripe is half-open: this call is the probe",
        "breaker stripe closed: the probe succeeded",
    ]
    caplog.clear()
    b.record(is_failure=False, duration_s=0.7)
    assert b.record(is_failure=False, duration_s=0.8) == "open"
    assert _lines(caplog) == ["breaker stripe opened after a slow call (0.80 s)"]


def test_an_override_names_its_action_and_keeps_its_reason_short(
    redis: Redis, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="resilience.breaker")
    b = _breaker(redis, clock)
    with pytest.raises(ValueError) as refused:
        b.force("half_open", actor="ops", reason="x")
    assert str(refused.value) == "action must be 'open', 'closed' or 'reset'"
    with pytest.raises(ValueError) as refused:
        b.force("open", actor="ops", reason="  ")
    assert str(refused.value) == "a reason is required"
    assert b.force("open", actor="ops", reason=" " + "r" * 250) == "open"
    text = "open by ops: " + "r" * 200
    assert b.snapshot()["audit"] == [f"{clock.now_ms} {text}"]
    assert _lines(caplog) == [f"breaker stripe {text}"]


def test_a_refusal_of_our_credentials_is_kept_for_its_time_and_cleared(
    redis: Redis, clock: Clock
) -> None:
    b = _breaker(redis, clock)
    b.note_authentication_failed(401)
    refused = b.snapshot()["auth_failed"]
    assert refused is not None and refused["status"] == 401
    before_ms = redis.time()[0] * 1000
    assert before_ms - 2000 <= refused["at_ms"] <= before_ms + 1000
    assert 0 < redis.ttl(b.auth_key) <= AUTH_FAILED_TTL_S
    b.clear_authentication_failed()
    assert b.snapshot()["auth_failed"] is None
    redis.set(b.auth_key, "garbled")
    assert b.snapshot()["auth_failed"] is None
    redis.set(b.auth_key, "403 x")
    assert b.snapshot()["auth_failed"] is None
    redis.set(b.auth_key, "403 1700000000000")
    assert b.snapshot()["auth_failed"] == {"status": 403, "at_ms": 1700000000000}


def test_the_open_period_doubles_up_to_its_cap_to_the_millisecond(
    redis: Redis, clock: Clock
) -> None:
    b = _breaker(redis, clock)
    _open(b)
    periods = []
    for _ in range(4):  # 10 s, then each failed probe doubles it: 20, 40, then capped at 40
        periods.append(b.snapshot()["open_until_ms"] - clock.now_ms)
        clock.advance(periods[-1] / 1000)
        probe = b.allow()
        assert b.record(is_failure=True, duration_s=0.01, token=probe.token) == "open"
    periods.append(b.snapshot()["open_until_ms"] - clock.now_ms)
    assert periods == [10_000, 20_000, 40_000, 40_000, 40_000]
