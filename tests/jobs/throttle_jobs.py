"""Job functions used by the throttle tests (RQ imports them by path)."""

from __future__ import annotations

from extensions import redis_client
from jobs.throttled import throttled

FAIL_FLAG = "test:throttle:fail"
RUNS = "test:throttle:runs"


@throttled
def flaky_job(number: int) -> int:
    redis_client.client.incr(RUNS)
    if redis_client.client.exists(FAIL_FLAG):
        raise RuntimeError(f"provider exploded on job {number}")
    return number
