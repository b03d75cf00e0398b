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
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from devtools.postgres import PostgresCluster, postgres_cluster
from devtools.servers import RedisServer, free_port, redis_server, wait_for_port
from devtools.supervisor_conf import flask_args, worker_args
from providers.registry import spec_for
from services.platform.queues import MAINTENANCE_QUEUE, provider_queue_name

PROJECT_DIR = Path(__file__).resolve().parents[2]
STRIPE_QUEUE = provider_queue_name("stripe")  # the product's own names and commands
BRAINTREE_QUEUE = provider_queue_name("braintree")


def migrate(env: dict[str, str]) -> None:
    """`flask db upgrade` against the DATABASE_URL in `env`."""
    subprocess.run(
        [sys.executable, "-m", "flask", *flask_args("db", "upgrade")],
        cwd=PROJECT_DIR,
        env=env,
        check=True,
        capture_output=True,
    )


@dataclass
class Program:
    """One process of the system, restartable like a supervisor program."""

    name: str
    cmd: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0

    def start(self, env: dict[str, str]) -> None:
        with open(self.log, "ab") as handle:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen(
                self.cmd,
                cwd=PROJECT_DIR,
                env=env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the program and its children (an RQ worker's work horse too)."""
        if self.proc is not None:
            with suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)

    def wait_stopped(self) -> None:
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()


@dataclass
class Stack:
    web_url: str
    sandbox_url: str
    database_url: str
    redis: RedisServer
    postgres: PostgresCluster | None
    env: dict[str, str]
    programs: list[Program] = field(default_factory=list)

    @property
    def redis_url(self) -> str:
        return self.redis.url

    @property
    def workers(self) -> list[Program]:
        return [p for p in self.programs if p.name.startswith("worker")]

    def supervise(self) -> int:
        """Start again every program that exited (supervisor's autorestart); return how many."""
        restarted = 0
        for program in self.programs:
            if not program.is_running:
                program.restarts += 1
                program.start(self.env)
                restarted += 1
        return restarted


@contextmanager
def running_stack(
    *,
    web_workers: int = 2,
    web_threads: int = 4,
    queue_workers: int = 2,
    queue_slots: int = 1,
    settings: dict[str, str] | None = None,
) -> Iterator[Stack]:
    """Start the system on PostgreSQL (DRILL_DATABASE_URL, else a throwaway cluster);
    yield it; stop every process and remove every file."""
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="drill-")))
        postgres: PostgresCluster | None = None
        database_url = os.environ.get("DRILL_DATABASE_URL") or ""
        if not database_url:
            postgres = stack.enter_context(postgres_cluster())
            database_url = postgres.url
        redis = stack.enter_context(redis_server())
        web_port, sandbox_port, mail_port = free_port(), free_port(), free_port()
        sandbox_url = f"http://127.0.0.1:{sandbox_port}"
        (tmp / "prometheus").mkdir()
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": redis.url,
            "SECRET_KEY": "drill",
            "SANDBOX_URL": sandbox_url,
            "STRIPE_API_BASE": sandbox_url,
            "BRAINTREE_API_BASE": sandbox_url,
            # The bank sends 3-D Secure customers back to this web server.
            "PUBLIC_URL": f"http://127.0.0.1:{web_port}",
            "SMTP_URL": f"smtp://127.0.0.1:{mail_port}",  # the development sink
            "PROMETHEUS_MULTIPROC_DIR": str(tmp / "prometheus"),
            **(settings or {}),
        }
        migrate(env)
        result = Stack(
            f"http://127.0.0.1:{web_port}", sandbox_url, database_url, redis, postgres, env
        )
        flask = [sys.executable, "-m", "flask"]
        programs = [
            Program(
                "sandbox",
                [
                    *(sys.executable, "-m", "sandbox", "--port", str(sandbox_port)),
                    *("--db", str(tmp / "sandbox.db")),
                    *("--webhook-url", f"{result.web_url}/webhooks"),
                    # The drills' customers pay with a few test cards and one price, so
                    # Braintree's duplicate checking (a merchant setting) would turn
                    # them down; off, the shop alone must keep every charge single.
                    *("--braintree-duplicate-window-s", "0"),
                ],
                tmp / "sandbox.log",
            ),
            Program(
                "web",
                [
                    str(Path(sys.executable).parent / "gunicorn"),
                    "wsgi:app",
                    *("--bind", f"127.0.0.1:{web_port}", "--workers", str(web_workers)),
                    *("--worker-class", "gthread", "--threads", str(web_threads)),
                    *("--timeout", "60"),
                ],
                tmp / "web.log",
            ),
            *(
                Program(
                    f"worker-stripe-{i}",
                    [*flask, *worker_args(STRIPE_QUEUE, queue_slots)],
                    tmp / f"w{i}.log",
                )
                for i in range(queue_workers)
            ),
            Program(
                "worker-braintree",
                [*flask, *worker_args(BRAINTREE_QUEUE, spec_for("braintree").slots)],
                tmp / "wb.log",
            ),
            Program(
                "worker-maintenance", [*flask, *worker_args(MAINTENANCE_QUEUE)], tmp / "wm.log"
            ),
            Program(
                "mail",
                [
                    *(sys.executable, "-m", "devtools.mail_sink", "--port", str(mail_port)),
                    *("--dir", str(tmp / "mail")),
                ],
                tmp / "mail.log",
            ),
            Program(
                "worker-notifications",
                [*flask, *worker_args(env.get("NOTIFICATIONS_QUEUE", "notifications"))],
                tmp / "wn.log",
            ),
        ]
        result.programs.extend(programs)
        try:
            for program in programs:
                program.start(env)
            wait_for_port(sandbox_port)
            wait_for_port(web_port)
            wait_ready(result.web_url)
            yield result
        finally:
            for program in programs:  # all at once: each takes a moment to shut down
                program.terminate()
            for program in programs:
                program.wait_stopped()


def wait_ready(web_url: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if requests.get(f"{web_url}/readyz", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise TimeoutError("the web process never became ready")


class Sweeper:
    """Runs the sweeps and the pending-events retry every couple of seconds (the
    scheduler's jobs, compressed in time).

    Sweeps that fail because the database or Redis is down are counted, not raised:
    the next tick tries again, as the scheduler would.
    """

    def __init__(self, stack: Stack, *, grace_s: int, every_s: float = 2.0) -> None:
        from app import create_app

        self.app = create_app(
            {
                "SQLALCHEMY_DATABASE_URI": stack.database_url,
                "REDIS_URL": stack.redis_url,
                "PENDING_SWEEP_GRACE_S": grace_s,
                "STRIPE_API_BASE": stack.sandbox_url,
                # The system's own address: a request built here (a charge's return URL)
                # is the one its workers would send, so a key's replay matches it.
                "PUBLIC_URL": stack.env["PUBLIC_URL"],
                "SMTP_URL": stack.env["SMTP_URL"],
                "NOTIFICATIONS_QUEUE": stack.env.get("NOTIFICATIONS_QUEUE", "notifications"),
            }
        )
        self.every_s = every_s
        self.last = 0.0
        self.failed = 0

    def tick(self) -> None:
        if time.monotonic() - self.last < self.every_s:
            return
        self.last = time.monotonic()
        from extensions import db
        from services.movements.janitor import sweep
        from services.notifications.emails import sweep_outbox
        from services.payments.authentication import sweep_abandoned
        from services.webhooks.events import retry_pending_events

        with self.app.app_context():
            try:
                sweep()
                sweep_abandoned()
                sweep_outbox()
                # Events whose application job was lost (Redis down as they came).
                retry_pending_events(budget_s=2.0)
            except Exception:
                self.failed += 1
                db.session.rollback()

    def close(self) -> None:
        from extensions import db, redis_client

        with self.app.app_context():
            db.session.remove()
            db.engine.dispose()
            redis_client.client.close()

    def cli(self, *args: str) -> tuple[int, str]:
        """Run a `flask` command in this process (no interpreter start): exit code, output."""
        with self.app.app_context():  # not an app of a caller around us (a test's)
            result = self.app.test_cli_runner().invoke(args=list(args))
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise RuntimeError(f"flask {' '.join(args)} failed") from result.exception
        return result.exit_code, result.output

    def breaker_snapshot(self) -> dict[str, Any]:
        from services.platform.provider_clients import breaker_for

        with self.app.app_context():
            return breaker_for("stripe").snapshot()


def api_customer(sweeper: Sweeper, email: str) -> str:
    """Create a customer through `flask customers create`; return its API token."""
    exit_code, output = sweeper.cli("customers", "create", email)
    if exit_code != 0 or "api token: " not in output:
        raise RuntimeError(f"could not create {email}: {output}")
    return output.split("api token: ")[1].strip()


def settle(
    stack: Stack, sweeper: Sweeper, settle_s: float, also: Callable[[], bool] | None = None
) -> float | None:
    """Wait until no payment is still moving (and `also` holds); return how long that
    took, or None."""
    from sqlalchemy import func, select

    from extensions import db
    from models import Payment, Refund

    started = time.monotonic()
    while time.monotonic() - started < settle_s:
        stack.supervise()
        sweeper.tick()
        with sweeper.app.app_context():
            try:
                moving = sum(
                    db.session.scalar(
                        select(func.count())
                        .select_from(model)
                        .where(model.status.not_in(["succeeded", "failed", "needs_review"]))
                    )
                    or 0
                    for model in (Payment, Refund)
                )
            except Exception:
                moving = -1
            finally:
                db.session.remove()
        if moving == 0 and (also is None or also()):
            return time.monotonic() - started
        time.sleep(1)
    return None
