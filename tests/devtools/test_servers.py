"""Throwaway servers are removed when their owner is stopped with SIGTERM (e.g. `timeout`);
a server run for a block listens in it and is gone after it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devtools.servers import free_port, running

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


def test_a_running_server_listens_in_the_block_and_is_gone_after_it() -> None:
    port = free_port()
    command = [sys.executable, "-m", "http.server", str(port), "-b", "127.0.0.1"]
    with running(command, port) as proc:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    assert proc.returncode is not None  # terminated and waited for
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
