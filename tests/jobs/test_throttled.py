"""Throttled jobs: after N exceptions on a queue, its jobs are deferred (not run, not
failed), jittered, and run once the hold is over."""

from __future__ import annotations

import time
from typing import Any

import pytest
import time_machine
from flask import Flask
from redis import Redis
from rq import Queue
from rq.registry import FailedJobRegistry, ScheduledJobRegistry
from rq.scheduler import RQScheduler

from commands.workers import build_worker
from jobs.throttled import throttle_for
from tests.jobs.throttle_jobs import FAIL_FLAG, RUNS, flaky_job, succeeds_beside_a_failure_job

QUEUE = "payments-stripe"


@pytest.fixture
def throttle_app(app: Flask, make_app: Any) -> Flask:
    """A worker's app with a quick throttle (its own: the shared app is never changed)."""
    return make_app(THROTTLE_MAX_EXCEPTIONS=3, THROTTLE_DECAY_S=4.0, THROTTLE_JITTER_S=2.0)


def work(app: Flask) -> None:
    with app.app_context():
        build_worker(app, [QUEUE], simple=True).work(burst=True)


def test_throttle_defers_then_releases_with_jitter(throttle_app: Flask) -> None:
    app = throttle_app
    redis = Redis.from_url(app.config["REDIS_URL"])
    queue = Queue(QUEUE, connection=redis)
    redis.set(FAIL_FLAG, 1)
    for number in range(3):
        queue.enqueue(flaky_job, number)
    work(app)
    assert len(FailedJobRegistry(queue=queue)) == 3  # the provider's exceptions
    assert int(redis.get(RUNS) or 0) == 3

    for number in range(10):
        queue.enqueue(flaky_job, 100 + number)
    work(app)
    assert int(redis.get(RUNS) or 0) == 3  # throttled: not run
    assert len(FailedJobRegistry(queue=queue)) == 3  # ...and not failed
    scheduled = ScheduledJobRegistry(queue=queue)
    times = [scheduled.get_scheduled_time(job_id) for job_id in scheduled.get_job_ids()]
    assert len(times) == 10
    assert (max(times) - min(times)).total_seconds() >= 0.5  # spread out, not a herd

    redis.delete(FAIL_FLAG)  # the provider recovers
    with app.app_context():
        throttle = throttle_for(QUEUE)
        assert 0 < throttle.remaining_s() <= 4.0  # held: THROTTLE_DECAY_S at most
    # Time passes, not waited for: decay (4 s) and the largest jitter (2 s), for the
    # throttle's deadline in Redis (it reads Redis' TIME) and RQ's scheduler alike.
    later_s = 6.2
    redis.hincrby(throttle.key, "throttled_until", -int(later_s * 1000))
    scheduler = RQScheduler([queue], connection=redis)
    scheduler.acquire_locks()
    with time_machine.travel(time.time() + later_s):
        scheduler.enqueue_scheduled_jobs()
    scheduler.release_locks()
    with app.app_context():
        assert throttle.remaining_s() == 0
    work(app)
    assert int(redis.get(RUNS) or 0) == 13  # each deferred job ran once
    assert len(ScheduledJobRegistry(queue=queue)) == 0
    redis.close()


def test_a_success_clears_a_count_made_while_it_ran(throttle_app: Flask) -> None:
    redis = Redis.from_url(throttle_app.config["REDIS_URL"])
    queue = Queue(QUEUE, connection=redis)
    queue.enqueue(succeeds_beside_a_failure_job, QUEUE)
    work(throttle_app)
    with throttle_app.app_context():
        assert redis.hget(throttle_for(QUEUE).key, "count") is None
    redis.close()
