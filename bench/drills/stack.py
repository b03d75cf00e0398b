"""A whole system started for a drill: database, Redis, sandbox, gunicorn, RQ workers.

Everything runs on loopback ports chosen at start and is stopped afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import requests

from devtools.servers import free_port, throwaway_postgres, throwaway_redis, wait_for_port

PROJECT_DIR = Path(__file__).resolve().parents[2]


@dataclass
class Stack:
    web_url: str
    sandbox_url: str
    database_url: str
    redis_url: str
    env: dict[str, str]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def flask(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "flask", "--app", "app", *args],
            cwd=PROJECT_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        )


def _spawn(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as handle:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            cmd,
            cwd=PROJECT_DIR,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@contextmanager
def running_stack(
    *, web_workers: int = 2, queue_workers: int = 2, settings: dict[str, str] | None = None
) -> Iterator[Stack]:
    """Start the system; yield it; stop every process and remove every file."""
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="drill-")))
        database_url = os.environ.get("DRILL_DATABASE_URL") or ""
        if not database_url:
            try:
                database_url = stack.enter_context(throwaway_postgres())
            except RuntimeError:
                database_url = f"sqlite:///{tmp}/drill.db"
        redis_url = stack.enter_context(throwaway_redis())
        web_port, sandbox_port = free_port(), free_port()
        sandbox_url = f"http://127.0.0.1:{sandbox_port}"
        (tmp / "prometheus").mkdir()
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "SECRET_KEY": "drill",
            "SANDBOX_URL": sandbox_url,
            "STRIPE_API_BASE": sandbox_url,
            "ACQUIRER_API_BASE": f"{sandbox_url}/acquirer",
            "PROMETHEUS_MULTIPROC_DIR": str(tmp / "prometheus"),
            **(settings or {}),
        }
        subprocess.run(
            [sys.executable, "-m", "flask", "--app", "app", "db", "upgrade"],
            cwd=PROJECT_DIR,
            env=env,
            check=True,
            capture_output=True,
        )
        result = Stack(f"http://127.0.0.1:{web_port}", sandbox_url, database_url, redis_url, env)
        procs = result.processes
        procs.append(
            _spawn(
                [
                    sys.executable,
                    "-m",
                    "sandbox",
                    "--port",
                    str(sandbox_port),
                    "--db",
                    str(tmp / "sandbox.db"),
                    "--webhook-url",
                    f"{result.web_url}/webhooks",
                ],
                env,
                tmp / "sandbox.log",
            )
        )
        procs.append(
            _spawn(
                [
                    str(Path(sys.executable).parent / "gunicorn"),
                    "wsgi:app",
                    "--bind",
                    f"127.0.0.1:{web_port}",
                    "--workers",
                    str(web_workers),
                    "--worker-class",
                    "gthread",
                    "--threads",
                    "4",
                    "--timeout",
                    "60",
                ],
                env,
                tmp / "web.log",
            )
        )
        for index in range(queue_workers):
            procs.append(
                _spawn(
                    [sys.executable, "-m", "flask", "--app", "app", "worker", "payments-stripe"],
                    env,
                    tmp / f"worker-{index}.log",
                )
            )
        procs.append(
            _spawn(
                [sys.executable, "-m", "flask", "--app", "app", "worker", "maintenance"],
                env,
                tmp / "maintenance.log",
            )
        )
        try:
            wait_for_port(sandbox_port)
            wait_for_port(web_port)
            _wait_ready(result.web_url)
            yield result
        finally:
            for proc in reversed(procs):
                _stop(proc)


def _wait_ready(web_url: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if requests.get(f"{web_url}/readyz", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise TimeoutError("the web process never became ready")
