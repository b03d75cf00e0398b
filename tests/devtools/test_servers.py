"""Throwaway servers are removed when their owner is stopped with SIGTERM (e.g. `timeout`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

OWNER = """
import sys, time
from devtools.postgres import postgres_cluster
from devtools.servers import redis_server
with postgres_cluster() as pg, redis_server() as redis:
    print(pg.workdir, redis.workdir, redis.proc.pid, flush=True)
    time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigterm_stops_and_removes_the_servers() -> None:
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert owner.stdout is not None
    pg_dir, redis_dir, redis_pid = owner.stdout.readline().split()
    assert Path(pg_dir, "data", "postmaster.pid").exists() and _alive(int(redis_pid))
    owner.send_signal(signal.SIGTERM)
    owner.wait(timeout=60)
    owner.stdout.close()
    deadline = time.monotonic() + 10
    while _alive(int(redis_pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(int(redis_pid))
    assert not Path(pg_dir).exists() and not Path(redis_dir).exists()
