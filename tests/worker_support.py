"""Real RQ worker processes for tests (started with `flask worker`, killed for sure)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from flask import Flask

from services.platform.queues import provider_queue_name
from tests.helpers import FAST_PROVIDER_CONFIG

PROJECT_DIR = Path(__file__).resolve().parents[1]


def wait_for(predicate: Any, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def children_of(pid: int) -> list[int]:
    """Direct children of `pid` (RQ's work horse runs in its own session)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children.append(int(stat.parent.name))
    return children


def start_worker(
    app: Flask, sandbox: Any, *args: str, output: Path | None = None, **settings: object
) -> subprocess.Popen[bytes]:
    """`flask worker` in its own process on the stripe queue, or on `args` (queues and
    options) when given; what it prints goes to `output` when given."""
    env = {
        **os.environ,
        "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"],
        "REDIS_URL": app.config["REDIS_URL"],
        "STRIPE_API_BASE": sandbox.url,
        "SECRET_KEY": "test",
        **{k: str(v) for k, v in {**FAST_PROVIDER_CONFIG, **settings}.items()},
    }
    command = [sys.executable, "-m", "flask", "--app", "app", "worker"]
    command += args or [provider_queue_name("stripe")]
    with contextlib.ExitStack() as files:  # the child keeps its own copy of the log file
        log: Any = subprocess.DEVNULL if output is None else files.enter_context(output.open("ab"))
        return subprocess.Popen(
            command,
            cwd=PROJECT_DIR,
            env=env,
            start_new_session=True,
            stdout=log,
            stderr=subprocess.DEVNULL if output is None else subprocess.STDOUT,
        )


def stop_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    """SIGKILL each worker and its work horse (which runs in a session of its own)."""
    for worker in workers:
        if worker.poll() is None:
            for pid in [*children_of(worker.pid), worker.pid]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    for worker in workers:
        worker.wait(timeout=10)


# Jobs for the threaded worker's tests: they meet in Redis and wait with deadlines, so
# what they prove (how many ran at once) does not depend on timing.
def rendezvous_job(key: str, expected: int, wait_s: float = 20.0) -> int:
    """Count in under `key`, then wait until `expected` jobs have: all of them finish
    only if that many ran at once; otherwise each raises after `wait_s`."""
    from extensions import redis_client

    client = redis_client.client
    client.incr(key)
    deadline = time.monotonic() + wait_s
    while int(client.get(key) or 0) < expected:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{client.get(key)!r} of {expected} jobs came")
        time.sleep(0.01)
    return expected


def hold_job(started_key: str, release_key: str, done_key: str) -> None:
    """Count in under `started_key`, wait for `release_key`, count out under `done_key`."""
    from extensions import redis_client

    client = redis_client.client
    client.incr(started_key)
    deadline = time.monotonic() + 60
    while not client.exists(release_key):
        if time.monotonic() > deadline:
            raise TimeoutError("never released")
        time.sleep(0.02)
    client.incr(done_key)


def spin_job(seconds: float) -> None:
    """Busy in Python for `seconds` (a job that outlives its timeout)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.01)
