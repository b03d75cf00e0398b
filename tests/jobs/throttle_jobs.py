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


@throttled
def succeeds_beside_a_failure_job(queue_name: str) -> None:
    """Succeeds after another job's exception was counted while it ran."""
    from jobs.throttled import throttle_for

    throttle_for(queue_name).record_failure()
