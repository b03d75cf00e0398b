"""The throttle's counting, in Redis: exceptions within the window hold the key, a
success clears the count."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from redis import Redis

from resilience.throttle import JobThrottle, ThrottleConfig

CONFIG = ThrottleConfig(max_exceptions=2, window_s=60, decay_s=30, jitter_s=1)


@pytest.fixture
def redis(server_urls: dict[str, str]) -> Iterator[Redis]:
    client = Redis.from_url(server_urls["redis"])
    client.delete(*(client.keys("throttle:*") or ["none"]))
    yield client
    client.close()


def test_the_nth_exception_holds_the_key(redis: Redis) -> None:
    throttle = JobThrottle(redis, "payments-test", CONFIG)
    throttle.record_failure()
    assert throttle.remaining_s() == 0
    throttle.record_failure()
    assert 25 < throttle.remaining_s() <= 30
    assert JobThrottle(redis, "payments-other", CONFIG).remaining_s() == 0  # per key


def test_a_success_clears_the_count(redis: Redis) -> None:
    throttle = JobThrottle(redis, "payments-test2", CONFIG)
    throttle.record_failure()
    throttle.record_success()
    throttle.record_failure()
    assert throttle.remaining_s() == 0
