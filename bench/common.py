"""Shared benchmark plumbing: a PostgreSQL to run on, an app bound to it, JSON results."""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from devtools.servers import throwaway_postgres

RESULTS_DIR = Path(__file__).resolve().parent / "results"


@contextmanager
def postgres_url() -> Iterator[str]:
    """BENCH_DATABASE_URL when set (must be PostgreSQL), else a throwaway cluster."""
    given = os.environ.get("BENCH_DATABASE_URL", "")
    if given:
        if not given.startswith("postgresql"):
            raise SystemExit("BENCH_DATABASE_URL must be a PostgreSQL URL")
        yield given
        return
    with throwaway_postgres() as url:
        yield url


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def write_results(name: str, results: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **results}, indent=2))
    return path


@contextmanager
def redis_url() -> Iterator[str]:
    """BENCH_REDIS_URL when set, else a throwaway Redis."""
    from devtools.servers import throwaway_redis

    given = os.environ.get("BENCH_REDIS_URL", "")
    if given:
        yield given
        return
    with throwaway_redis() as url:
        yield url


@contextmanager
def sandbox_url() -> Iterator[str]:
    """A throwaway provider sandbox process on a free port."""
    import subprocess
    import sys
    import tempfile

    from devtools.servers import free_port, wait_for_port

    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sandbox", "--port", str(port), "--db", f"{tmp}/sandbox.db"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_port(port)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait(timeout=10)
