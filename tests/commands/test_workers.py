"""`flask worker`: jobs run inside the app context, in the worker process by default."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from redis import Redis
from redis.exceptions import RedisError
from rq import Queue, Worker
from rq.exceptions import StopRequested
from rq.registry import ScheduledJobRegistry
from rq.suspension import resume, suspend
from rq.worker import WorkerStatus

from commands.workers import (
    LOOP_CHECK_S,
    AppSimpleWorker,
    AppThreadedWorker,
    AppWorker,
    build_worker,
)
from devtools.sentinel import sentinel_group
from devtools.servers import RedisServer, free_port
from extensions import db, redis_client
from models import Payment, PaymentStatus
from services.movements import lifecycle
from services.payments.kind import CHARGE
from services.platform.provider_clients import breaker_for
from services.platform.queues import MAINTENANCE_QUEUE, maintenance_queue, provider_queue_name
from tests.factories import make_customer, make_order, make_payment
from tests.helpers import got
from tests.redis_support import fail_over
from tests.round_trips import counted
from tests.worker_support import PROJECT_DIR, start_worker, stop_workers, wait_for


def test_in_process_workers_by_default_and_a_fork_on_request(app: Flask) -> None:
    with app.app_context():
        assert isinstance(build_worker(app, [MAINTENANCE_QUEUE], simple=True), AppSimpleWorker)
        assert isinstance(build_worker(app, [MAINTENANCE_QUEUE]), AppWorker)


def test_a_burst_worker_runs_a_job_with_the_app(app: Flask, runner: Any) -> None:
    queue = Queue(MAINTENANCE_QUEUE, connection=Redis.from_url(app.config["REDIS_URL"]))
    job = queue.enqueue("jobs.webhooks.retry_pending_webhooks_job")
    gc.unfreeze()
    try:
        result = runner.invoke(args=["worker", MAINTENANCE_QUEUE, "--burst"])
        # The app's objects were frozen before RQ forked (its scheduler), so the
        # collector's passes do not copy their pages into every process.
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert result.exit_code == 0, result.output
    job.refresh()
    assert job.get_status() == "finished" and job.return_value() == 0  # ran with the database


def test_a_worker_and_the_scheduler_carry_on_after_a_redis_failover(
    app: Flask, make_app: Any, sandbox: Any
) -> None:
    """One real worker process and `flask scheduler` on a Sentinel URL: the primary is
    stopped, the Sentinels promote the replica, and both go on without a restart; so does
    the breaker (its scripts load again on the new primary)."""
    with sentinel_group() as group:
        sentinel_app = make_app(REDIS_URL=group.url)
        worker = start_worker(app, sandbox, REDIS_URL=group.url)
        scheduler = subprocess.Popen(
            [sys.executable, "-m", "flask", "--app", "app", "scheduler"],
            cwd=PROJECT_DIR,
            env={
                **os.environ,
                "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"],
                "REDIS_URL": group.url,
                "SWEEP_INTERVAL_S": "1",
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            with sentinel_app.app_context():
                charged = _charge_through(sentinel_app)
                wait_for(lambda: _swept(), timeout_s=20)
                breaker_for("stripe").force("open", actor="test", reason="before")
                redis_client.client.wait(1, 2000)  # on the replica too (replication is async)
                fail_over(group)
                wait_for(_reachable, timeout_s=20)
                maintenance_queue().empty()
                wait_for(lambda: _swept(), timeout_s=20)  # the scheduler, on the new primary
                assert breaker_for("stripe").snapshot()["state"] == "forced_open"  # replicated
                breaker_for("stripe").force("reset", actor="test", reason="after")
                assert breaker_for("stripe").snapshot()["state"] == "closed"
                assert _charge_through(sentinel_app) != charged  # the same worker process
            assert worker.poll() is None and scheduler.poll() is None  # never restarted
        finally:
            scheduler.kill()
            scheduler.wait(timeout=10)
            stop_workers([worker])


def _charge_through(app: Flask) -> int:
    """A payment charged by the worker process: enqueued here, succeeded there."""
    created = make_payment(make_order(make_customer()))
    db.session.commit()
    lifecycle.enqueue_send(CHARGE, "stripe", created.id, job_id=f"charge-{created.id}")
    wait_for(lambda: _status(created.id) == PaymentStatus.SUCCEEDED, timeout_s=30)
    return created.id


def _status(payment_id: int) -> PaymentStatus:
    db.session.rollback()
    return got(Payment, payment_id).status


def _swept() -> bool:
    try:
        return maintenance_queue().count > 0
    except RedisError:
        return False


def _reachable() -> bool:
    try:
        return bool(redis_client.client.ping())
    except RedisError:
        return False


def test_a_worker_outlasts_a_redis_outage(app: Flask, sandbox: Any) -> None:
    """Redis is down when the worker starts (as in a long outage): it keeps trying instead
    of exiting, and works once Redis is back."""
    with tempfile.TemporaryDirectory() as workdir:
        redis = RedisServer(workdir, free_port())
        output = Path(workdir) / "worker.log"
        worker = start_worker(app, sandbox, REDIS_URL=redis.url, output=output)
        try:
            wait_for(lambda: output.read_text().count("worker lost Redis") >= 3, timeout_s=30)
            assert worker.poll() is None  # still trying, not exited
            redis.start()
            queue = Queue(provider_queue_name("stripe"), connection=Redis.from_url(redis.url))
            job = queue.enqueue("jobs.movements.send_job", "charge", 999999)
            wait_for(lambda: job.get_status(refresh=True) == "finished", timeout_s=30)
        finally:
            stop_workers([worker])
            redis.stop()


THREADED = "test-threads"


def _queue(app: Flask) -> Queue:
    return Queue(THREADED, connection=Redis.from_url(app.config["REDIS_URL"]))


def _burst(app: Flask, slots: int) -> None:
    with app.app_context():
        worker = build_worker(app, [THREADED], simple=True, slots=slots)
        assert isinstance(worker, AppThreadedWorker) and worker.slots == slots
        worker.work(burst=True)


def test_a_threaded_worker_runs_its_slots_at_once_and_never_more(app: Flask) -> None:
    """Six jobs that each wait for all six finish only when six run at once; three that
    wait for three all time out on two slots (a third never started beside them)."""
    queue = _queue(app)
    met = [queue.enqueue("tests.worker_support.rendezvous_job", "six", 6) for _ in range(6)]
    _burst(app, slots=6)
    assert [job.get_status(refresh=True) for job in met] == ["finished"] * 6
    bound = [
        queue.enqueue("tests.worker_support.rendezvous_job", "three", 3, 1.0) for _ in range(2)
    ]
    _burst(app, slots=2)
    assert [job.get_status(refresh=True) for job in bound] == ["failed"] * 2
    assert Redis.from_url(app.config["REDIS_URL"]).get("three") == b"2"


def test_a_threaded_job_keeps_its_timeout_and_the_others_go_on(app: Flask) -> None:
    queue = _queue(app)
    stuck = queue.enqueue("tests.worker_support.spin_job", 30, job_timeout=1)
    quick = queue.enqueue("tests.worker_support.rendezvous_job", "one", 1)
    started = time.monotonic()
    _burst(app, slots=2)
    assert time.monotonic() - started < 20  # the 30 s job was stopped at its timeout
    assert stuck.get_status(refresh=True) == "failed"
    assert "JobTimeoutException" in (stuck.latest_result().exc_string or "")  # type: ignore[union-attr]  # a failed job has a result
    assert quick.get_status(refresh=True) == "finished"


def test_a_threaded_worker_stops_warm_finishing_the_jobs_in_flight(
    app: Flask, sandbox: Any
) -> None:
    """SIGTERM: no new job starts, the three in flight finish, the process exits 0."""
    redis = Redis.from_url(app.config["REDIS_URL"])
    queue = _queue(app)
    held = [
        queue.enqueue("tests.worker_support.hold_job", "started", "release", "done")
        for _ in range(3)
    ]
    worker = start_worker(app, sandbox, THREADED, "--slots", "4")
    try:
        wait_for(lambda: redis.get("started") == b"3", timeout_s=30)
        worker.send_signal(signal.SIGTERM)
        wait_for(lambda: any(w.shutdown_requested_date for w in Worker.all(connection=redis)))
        late = queue.enqueue("tests.worker_support.hold_job", "started", "release", "done")
        redis.set("release", 1)
        assert worker.wait(timeout=30) == 0
    finally:
        stop_workers([worker])
    assert redis.get("done") == b"3"
    assert [job.get_status(refresh=True) for job in held] == ["finished"] * 3
    assert late.get_status(refresh=True) == "queued"  # taken by no one


def test_a_busy_worker_beats_and_checks_suspension_once_a_second(app: Flask) -> None:
    with app.app_context():
        worker = build_worker(app, [MAINTENANCE_QUEUE], simple=True)
        assert isinstance(worker, AppSimpleWorker)
        worker.heartbeat()
        first = worker.last_heartbeat
        worker.heartbeat()  # within the second: not sent again
        assert worker.last_heartbeat == first
        worker._last_beat -= LOOP_CHECK_S  # a second later
        worker.heartbeat()
        assert worker.last_heartbeat is not None and first is not None
        assert worker.last_heartbeat > first
        beaten = worker.last_heartbeat
        worker.heartbeat(30)  # RQ's own, with its timeout: always sent
        assert worker.last_heartbeat > beaten
        assert redis_client.client.ttl(worker.key) <= 30

        worker.check_for_suspension(burst=True)  # not suspended: checked, carries on
        suspend(redis_client.client)
        try:
            worker.check_for_suspension(burst=True)  # within the second: not asked
            worker._last_suspension_check -= LOOP_CHECK_S
            with pytest.raises(StopRequested):  # a suspended burst worker stops
                worker.check_for_suspension(burst=True)
        finally:
            resume(redis_client.client)


def test_a_threaded_worker_with_calls_in_its_slots_says_busy(app: Flask) -> None:
    with app.app_context():
        worker = build_worker(app, [provider_queue_name("stripe")], slots=4)
        assert isinstance(worker, AppThreadedWorker)
        in_flight: Any = object()
        worker.executions = {"in-flight": in_flight}  # a call in a slot
        worker.set_state(WorkerStatus.IDLE)  # what RQ's loop says while it waits for more
        assert worker.get_state() == WorkerStatus.BUSY
        worker.executions = {}
        worker.set_state(WorkerStatus.IDLE)
        assert worker.get_state() == WorkerStatus.IDLE


def test_a_worker_writes_its_state_only_when_it_changes(app: Flask) -> None:
    with app.app_context():
        worker = build_worker(app, [MAINTENANCE_QUEUE], simple=True)
        worker.set_state(WorkerStatus.IDLE)
        assert redis_client.client.hget(worker.key, "state") == b"idle"
        redis_client.client.hdel(worker.key, "state")  # to see whether it is written again
        worker.set_state(WorkerStatus.IDLE)  # the same state: no round trip
        assert redis_client.client.hget(worker.key, "state") is None
        assert worker.get_state() == WorkerStatus.IDLE
        worker.set_state(WorkerStatus.BUSY)
        assert redis_client.client.hget(worker.key, "state") == b"busy"
        with redis_client.client.pipeline() as pipe:  # RQ's own pipelines: always
            worker.set_state(WorkerStatus.BUSY, pipeline=pipe)
            pipe.hdel(worker.key, "x")
            assert len(pipe) == 2


def test_a_job_costs_a_worker_at_most_eight_redis_round_trips(
    make_app: Any, server_urls: dict[str, str]
) -> None:
    """RQ's own per job: take it, read it, start it (two), the success (three). Not its
    state written twice when it does not change, nor one more beat when it returned."""
    with counted(server_urls["redis"]) as (redis_url, redis):
        app = make_app(REDIS_URL=redis_url)
        trips = []
        for count in (5, 25):
            with app.app_context():
                queue = Queue(MAINTENANCE_QUEUE, connection=redis_client.client)
                for _ in range(count):
                    queue.enqueue("builtins.len", "x")
                worker = build_worker(app, [MAINTENANCE_QUEUE], simple=True)
                redis.reset()
                worker.work(burst=True, with_scheduler=False)
                trips.append(redis.reset())
    # The worker's start and end cancel out. (Ten before, as RQ runs it.)
    assert (trips[1] - trips[0]) / 20 <= 8


@pytest.mark.parametrize(
    ("schedules", "is_moved"), [("every", True), ("own", False), ("none", False)]
)
def test_whose_scheduled_jobs_a_worker_moves(
    app: Flask, runner: Any, schedules: str, is_moved: bool
) -> None:
    """A maintenance worker with `--schedules every` moves a provider queue's due
    scheduled job to that queue (the provider workers run no scheduler of their own:
    each would be a fork, its memory again); with its own queues' or none, it stays."""
    connection = Redis.from_url(app.config["REDIS_URL"])
    stripe = Queue(provider_queue_name("stripe"), connection=connection)
    job = stripe.enqueue_in(timedelta(seconds=0), "jobs.movements.sweep_job")
    time.sleep(0.01)  # due
    result = runner.invoke(args=["worker", MAINTENANCE_QUEUE, "--burst", "--schedules", schedules])
    assert result.exit_code == 0, result.output
    assert (job.id in stripe.job_ids) is is_moved
    assert (job.id in ScheduledJobRegistry(queue=stripe)) is not is_moved
