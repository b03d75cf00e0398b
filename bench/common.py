"""Shared benchmark plumbing: a PostgreSQL to run on, an app bound to it, JSON results."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

from bench.drills.stack import PROJECT_DIR, migrate
from devtools.postgres import throwaway_postgres
from devtools.servers import free_port, running, throwaway_redis, wait_for_port

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

    given = os.environ.get("BENCH_REDIS_URL", "")
    if given:
        yield given
        return
    with throwaway_redis() as url:
        yield url


@contextmanager
def sandbox_url() -> Iterator[str]:
    """A throwaway provider sandbox process on a free port."""

    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            sys.executable,
            "-m",
            "sandbox",
            "--port",
            str(port),
            "--db",
            f"{tmp}/sandbox.db",
        ]
        with running(command, port, cwd=PROJECT_DIR, stop_timeout_s=10):
            yield f"http://127.0.0.1:{port}"


def bulk_topups(db: Any, count: int, status: str, tag: str, *, is_sent: bool = True) -> list[int]:
    """Insert `count` wallet top-up payments of 10.00 EUR with Stripe's test card, each
    with its own customer and EUR wallet, in one statement (PostgreSQL); `is_sent`: as
    if sent once already (an outage's unknown ones), else never sent (a charge's start).
    Returns the payment ids. Commits."""
    from sqlalchemy import text

    ids = db.session.scalars(
        text("""
        WITH c AS (
            INSERT INTO customers (email, password_hash, created_at)
            SELECT 'bulk-' || :tag || '-' || g || '@example.com', 'x', now()
            FROM generate_series(1, :n) g RETURNING id
        ), w AS (
            INSERT INTO wallets (customer_id, currency, balance_minor, updated_at)
            SELECT id, 'EUR', 0, now() FROM c RETURNING id, customer_id
        )
        INSERT INTO payments (idempotency_key, customer_id, purpose, wallet_id, provider,
            amount_minor, currency, status, payment_method, send_count, reconcile_attempts,
            created_at, updated_at, first_sent_at, last_sent_at)
        SELECT gen_random_uuid(), w.customer_id, 'wallet_topup', w.id, 'stripe', 1000, 'EUR',
               :status, 'pm_card_visa', CASE WHEN :sent THEN 1 ELSE 0 END, 0, now(), now(),
               CASE WHEN :sent THEN now() END, CASE WHEN :sent THEN now() END
        FROM w ORDER BY w.id RETURNING id
        """),
        {"n": count, "status": status, "tag": tag, "sent": is_sent},
    ).all()
    db.session.commit()
    return list(ids)


def gunicorn(
    target: str, workers: int, env: dict[str, str], threads: int = 4
) -> tuple[subprocess.Popen[bytes], str]:
    """Serve `target` with gunicorn (gthread); (process, base URL)."""
    port = free_port()
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            target,
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--worker-class",
            "gthread",
            "--threads",
            str(threads),
        ],
        cwd=PROJECT_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for_port(port)
    return proc, f"http://127.0.0.1:{port}"


def load(send: Callable[[requests.Session], bool], clients: int, seconds: float) -> float:
    """Requests per second for which `send` returned True, from `clients` threads."""
    done = [0] * clients
    stop = time.monotonic() + seconds

    def client(index: int) -> None:
        session = requests.Session()
        while time.monotonic() < stop:
            if send(session):
                done[index] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(done) / seconds


@contextmanager
def served(target: str, workers: int, env: dict[str, str], threads: int = 4) -> Iterator[str]:
    """`target` under gunicorn for the duration of the block; yields its base URL."""
    proc, url = gunicorn(target, workers, env, threads)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait()


# Seconds each endpoint of `side_by_side` serves before it is measured.
WARMUP_S = 1.0


def minimal_send(url: str) -> Callable[[requests.Session], bool]:
    """One request to the minimal INSERT + enqueue endpoint (bench/drills/minimal_app.py,
    its table made by create_table): the limit for this design."""
    return lambda session: session.post(f"{url}/intake").status_code == 201


def side_by_side(
    sends: dict[str, Callable[[requests.Session], bool]],
    clients: int,
    seconds: float,
    slices: int = 4,
    warmup_s: float = WARMUP_S,
) -> dict[str, float]:
    """Requests/s of each `send`, measured in alternating slices of the same run, so a
    noisy neighbour on a shared machine slows all of them alike; each first for
    `warmup_s`, not counted (a fresh server's first requests compile and prepare what
    every later one reuses: a running server's rate is its steady state)."""
    for send in sends.values():
        load(send, clients, warmup_s)
    done = dict.fromkeys(sends, 0.0)
    for _ in range(slices):
        for name, send in sends.items():
            done[name] += load(send, clients, seconds / slices) * seconds / slices
    return {name: count / seconds for name, count in done.items()}


@contextmanager
def benchmark_system(**settings: str) -> Iterator[tuple[dict[str, str], Any]]:
    """A migrated PostgreSQL and a Redis (throwaway unless BENCH_* URLs are set), the
    minimal endpoint's table, and an app bound to them; yields (environment, app)."""
    from app import create_app
    from bench.drills.minimal_app import create_table
    from extensions import db

    with postgres_url() as db_url, redis_url() as r_url:
        env = {
            **os.environ,
            "DATABASE_URL": db_url,
            "REDIS_URL": r_url,
            "SECRET_KEY": "bench",
            **settings,
        }
        migrate(env)
        create_table(db_url)
        app = create_app({"SQLALCHEMY_DATABASE_URI": db_url, "REDIS_URL": r_url})
        try:
            yield env, app
        finally:
            with app.app_context():
                db.engine.dispose()


class Feed:
    """Hands the next item to whichever sender thread asks; None when all are used."""

    def __init__(self, items: Iterable[Any]) -> None:
        self._items = iter(items)
        self._lock = threading.Lock()

    def take(self) -> Any:
        with self._lock:
            return next(self._items, None)


TICK = os.sysconf("SC_CLK_TCK")


def process_tree(roots: list[int]) -> list[int]:
    """The processes and all their descendants, from /proc."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += [child for child, ppid in parent.items() if ppid == pid]
    return sorted(found)


def cpu_s(roots: list[int]) -> float:
    total = 0
    for pid in process_tree(roots):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICK


def memory_mb(roots: list[int]) -> tuple[float, float]:
    """The memory of the process trees, (RSS, PSS), found in one walk of /proc. RSS adds
    each process's resident pages up, so a page a process shares with its fork (RQ's
    scheduler) counts in both; PSS divides a shared page among the processes sharing it:
    what the trees take from the host."""
    pids = process_tree(roots)
    return _memory_kb(pids, "status", "VmRSS:") / 1024, _memory_kb(
        pids, "smaps_rollup", "Pss:"
    ) / 1024


def _memory_kb(pids: list[int], file: str, field: str) -> int:
    total_kb = 0
    for pid in pids:
        try:
            lines = Path(f"/proc/{pid}/{file}").read_text().splitlines()
        except OSError:
            continue
        total_kb += sum(int(line.split()[1]) for line in lines if line.startswith(field))
    return total_kb
