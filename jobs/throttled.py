"""The `throttled` decorator for RQ job functions (see resilience/throttle.py)."""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from rq import Queue, get_current_job

from extensions import per_app, redis_client
from resilience.throttle import JobThrottle, ThrottleConfig
from settings import settings

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])
DEFERRED = "deferred by the throttle"


def throttle_for(key: str) -> JobThrottle:
    """The app's throttle of this key, made once (per job it showed)."""
    return per_app("job_throttles", key, lambda: _new_throttle(key))


def _new_throttle(key: str) -> JobThrottle:
    config = settings().throttle
    return JobThrottle(
        redis_client.client,
        key,
        ThrottleConfig(
            max_exceptions=config.max_exceptions,
            window_s=config.window_s,
            decay_s=config.decay_s,
            jitter_s=config.jitter_s,
        ),
    )


def throttled(func: F) -> F:
    """Run the job unless its queue is throttled; then schedule it again, jittered."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        job = get_current_job()
        if job is None:  # called directly (tests, shell): no queue to throttle
            return func(*args, **kwargs)
        throttle = throttle_for(job.origin)
        remaining_s = throttle.remaining_s()
        if remaining_s > 0:
            # Come back after the hold, spread out: the breaker's single probe goes first
            # and the rest do not return as a herd.
            delay_s = remaining_s + random.uniform(0, throttle.config.jitter_s)
            base_id = job.id.split("_t")[0]
            Queue(job.origin, connection=redis_client.client).enqueue_in(
                timedelta(seconds=delay_s),
                job.func,
                *job.args,
                job_id=f"{base_id}_t{int(time.time() * 1000)}",
                **job.kwargs,
            )
            log.info("job %s on %s throttled; back in %.1f s", job.id, job.origin, delay_s)
            return DEFERRED
        try:
            result = func(*args, **kwargs)
        except Exception:
            throttle.record_failure()
            raise
        # Every success clears the count, also one counted by a job beside it while this
        # one ran (skipping the round trip when this job's start saw no count lets such
        # exceptions add up to a hold while calls succeed).
        throttle.record_success()
        return result

    return wrapper  # type: ignore[return-value]  # functools.wraps loses the TypeVar
