"""The cluster's hosts and what runs on each, started on a Network (bench/cluster/network.py):

    db        PostgreSQL, Sentinel 3 (with --database-failover: monitor, db-1 and
              db-2 instead, pg_auto_failover's, bench/cluster/database.py; Sentinel 3
              on monitor)
    redis-a   Redis (the first primary), Sentinel 1
    redis-b   Redis (its replica), Sentinel 2
    provider  the sandbox (Stripe, 200 ms latency) and the mail sink
    web-1/2   gunicorn
    worker-N  provider workers (payments-stripe) and a maintenance worker; the
              scheduler on worker-2, the notifications worker on worker-3
    client    this drill: API clients, checks, the faults

Every program is a supervisor-like Program (bench/drills/stack.py) started through
`ip netns exec <host>`, with the same settings everywhere: the ones that must agree.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import requests

from bench.cluster.database import AutoFailover
from bench.cluster.network import Network
from bench.common import RESULTS_DIR
from bench.drills.stack import STRIPE_QUEUE, Program, migrate, wait_ready
from devtools import nginx
from devtools.nginx import nginx_binary
from devtools.postgres import postgres_cluster
from devtools.sentinel import SentinelGroup, sentinel_server
from devtools.servers import RedisServer, wait_for_port
from devtools.supervisor_conf import flask_args, worker_args
from services.platform.queues import MAINTENANCE_QUEUE

HOSTS = [
    "client",
    "db",
    "redis-a",
    "redis-b",
    "provider",
    "web-1",
    "web-2",
    "worker-1",
    "worker-2",
    "worker-3",
]
FAILOVER_HOSTS = [h for h in HOSTS if h != "db"] + ["monitor", "db-1", "db-2"]
WORKER_HOSTS = ["worker-1", "worker-2", "worker-3"]
WEB_HOSTS = ["web-1", "web-2"]
GUNICORN_PORT = 8001  # on a web host's loopback, behind its nginx on :8000
GROUP = "payments"
PROVIDER_LATENCY_MS = 200

# Compressed time, the outage drill's ratios (a drill takes minutes, not hours).
SETTINGS = {
    "PROVIDER_CONNECT_TIMEOUT_S": "1",
    "PROVIDER_READ_TIMEOUT_S": "2",
    "PROVIDER_CALL_BUDGET_S": "4",
    "PROVIDER_MAX_RETRIES": "1",
    "PAYMENT_LEASE_S": "8",  # at least twice the call budget: a charge and a lookup
    "RECONCILE_DELAYS_S": "1,2,4,8",
    "RECONCILE_MAX_ATTEMPTS": "6",
    "STRIPE_SETTLE_S": "5",
    "PENDING_SWEEP_GRACE_S": "4",
    "SWEEP_INTERVAL_S": "2",
    "WEBHOOK_RETRY_INTERVAL_S": "5",
    "BACKFILL_INTERVAL_S": "10",
}


@dataclass
class Cluster:
    """The running hosts; the attributes the drills' checks (chaos_checks) read."""

    net: Network
    tmp: Path
    env: dict[str, str]
    sentinel: SentinelGroup
    programs: dict[str, list[Program]] = field(default_factory=dict)  # host -> programs
    workers_per_host: int = 2
    lost: set[str] = field(default_factory=set)  # hosts stopped for good
    database: AutoFailover | None = None  # the failover mode's (None: one PostgreSQL on db)

    @property
    def database_url(self) -> str:
        return self.env["DATABASE_URL"]

    @property
    def redis_url(self) -> str:
        return self.env["REDIS_URL"]

    @property
    def sandbox_url(self) -> str:
        return self.env["SANDBOX_URL"]

    def web_url(self, host: str) -> str:
        return f"http://{self.net.address(host)}:8000"

    def program(self, host: str, name: str, cmd: list[str]) -> Program:
        log = self.tmp / f"{host}-{name}.log"
        program = Program(f"{host}/{name}", [*self.net.run_in(host), *cmd], log)
        self.programs.setdefault(host, []).append(program)
        program.start(self.env)
        return program

    def payment_workers(self, host: str) -> list[Program]:
        return [p for p in self.programs.get(host, []) if "/stripe-" in p.name]

    def start_payment_workers(self, host: str) -> None:
        flask = [sys.executable, "-m", "flask"]
        for i in range(self.workers_per_host):
            self.program(host, f"stripe-{i}", [*flask, *worker_args(STRIPE_QUEUE)])

    def stop_payment_workers(self, host: str) -> None:
        stopping = self.payment_workers(host)  # off the list first: not restarted
        self.programs[host] = [p for p in self.programs[host] if p not in stopping]
        for program in stopping:
            program.terminate()
        for program in stopping:
            program.wait_stopped()

    def stop(self, host: str) -> None:
        """The host is lost: every program on it killed, and not started again."""
        self.lost.add(host)
        for program in self.programs.get(host, []):
            program.kill()

    def supervise(self) -> int:
        """Start again every program that exited on a host still up, as each host's
        supervisord would (autorestart); return how many."""
        restarted = 0
        for host, programs in list(self.programs.items()):
            for program in list(programs) if host not in self.lost else []:
                if not program.is_running:
                    program.restarts += 1
                    program.start(self.env)
                    restarted += 1
        return restarted

    def restarts(self) -> dict[str, int]:
        return {p.name: p.restarts for ps in self.programs.values() for p in ps if p.restarts}


@contextmanager
def running_cluster(
    net: Network, workers_per_host: int = 2, *, failover: bool = False
) -> Iterator[Cluster]:
    """Start every host's programs; stop them all and remove their files afterwards.
    `failover`: the database is a primary and a synchronous standby under
    pg_auto_failover (hosts monitor, db-1, db-2) instead of one PostgreSQL on db."""
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cluster-")))
        tmp.chmod(0o755)
        database = AutoFailover(net, tmp, dict(os.environ)) if failover else None
        if database is not None:
            stack.callback(database.stop)
            database.start()
            database_url = database.url
        else:
            database_url = stack.enter_context(
                postgres_cluster(host=net.address("db"), wrap=tuple(net.run_in("db")), port=5432)
            ).url
        sentinel = _sentinels(net, tmp, "monitor" if failover else "db")
        stack.callback(sentinel.stop)
        provider = net.address("provider")
        sandbox_url = f"http://{provider}:8099"
        env = {
            **{k: v for k, v in os.environ.items() if not k.endswith("_URL")},
            "DATABASE_URL": database_url,
            "REDIS_URL": sentinel.url,
            "SECRET_KEY": "cluster",
            "SANDBOX_URL": sandbox_url,
            "STRIPE_API_BASE": sandbox_url,
            "BRAINTREE_API_BASE": sandbox_url,
            "PUBLIC_URL": f"http://{net.address('web-1')}:8000",
            "SMTP_URL": f"smtp://{provider}:2525",
            "PROMETHEUS_MULTIPROC_DIR": str(tmp / "prometheus"),
            **SETTINGS,
        }
        (tmp / "prometheus").mkdir()
        migrate(env)
        cluster = Cluster(
            net, tmp, env, sentinel, workers_per_host=workers_per_host, database=database
        )
        try:
            _start_programs(cluster)
            yield cluster
        finally:
            # The drill is over and checked: no graceful shutdown to wait for.
            for program in [p for programs in cluster.programs.values() for p in programs]:
                program.kill()
            kept = RESULTS_DIR / "cluster-logs"  # each program's log, for the post-mortem
            shutil.rmtree(kept, ignore_errors=True)
            kept.mkdir(parents=True)
            for log in tmp.glob("*.log"):
                shutil.copy(log, kept / log.name)


def _sentinels(net: Network, tmp: Path, third: str) -> SentinelGroup:
    def redis(host: str, *args: str) -> RedisServer:
        workdir = tmp / host
        workdir.mkdir()
        return RedisServer(
            str(workdir), 6379, host=net.address(host), args=args, wrap=tuple(net.run_in(host))
        )

    primary = redis("redis-a")
    replica = redis("redis-b", "--replicaof", primary.host, "6379")
    sentinels = [
        sentinel_server(
            str(tmp / f"sentinel-{host}"),
            26379,
            primary,
            group=GROUP,
            host=net.address(host),
            wrap=tuple(net.run_in(host)),
        )
        for host in ("redis-a", "redis-b", third)
    ]
    group = SentinelGroup(GROUP, [primary, replica], sentinels)
    for server in [primary, replica, *sentinels]:
        server.start()
    return group


def _start_programs(cluster: Cluster) -> None:
    net, tmp = cluster.net, cluster.tmp
    python, flask = sys.executable, [sys.executable, "-m", "flask"]
    provider = net.address("provider")
    cluster.program(
        "provider",
        "sandbox",
        [
            *(python, "-m", "sandbox", "--host", provider, "--port", "8099"),
            *("--db", str(tmp / "sandbox.db")),
            # The provider posts to one address: web-2's stands in for the balancer's.
            *("--webhook-url", f"{cluster.web_url('web-2')}/webhooks"),
        ],
    )
    cluster.program(
        "provider",
        "mail",
        [
            *(python, "-m", "devtools.mail_sink", "--host", provider, "--port", "2525"),
            *("--dir", str(tmp / "mail")),
        ],
    )
    # The production web tier: nginx on each web host's address (deploy/nginx), which
    # buffers every request, in front of gunicorn on the host's own loopback (without
    # Debian's nginx, gunicorn alone on the address, as before).
    is_fronted = nginx_binary() is not None
    if is_fronted:
        cluster.env["TRUSTED_PROXIES"] = "1"  # the client's address, as nginx saw it
    for host in WEB_HOSTS:
        address = f"{net.address(host)}:8000"
        bind = f"127.0.0.1:{GUNICORN_PORT}" if is_fronted else address
        cluster.program(
            host,
            "web",
            [
                str(Path(python).parent / "gunicorn"),
                "wsgi:app",
                *("--bind", bind, "--workers", "2"),
                *("--worker-class", "edge.JSONErrorWorker", "--threads", "4"),
                *("--timeout", "60"),
            ],
        )
        if is_fronted:
            folder = tmp / f"{host}-nginx"
            folder.mkdir()
            cluster.program(host, "nginx", nginx.command(folder, address, bind))
    for host in WORKER_HOSTS:
        cluster.start_payment_workers(host)
        cluster.program(host, "maintenance", [*flask, *worker_args(MAINTENANCE_QUEUE)])
    cluster.program("worker-2", "scheduler", [*flask, *flask_args("scheduler")])
    cluster.program("worker-3", "notifications", [*flask, *worker_args("notifications")])
    wait_for_port(8099, host=provider)
    for host in WEB_HOSTS:
        wait_for_port(8000, host=net.address(host))
        wait_ready(cluster.web_url(host))
    requests.post(
        f"{cluster.sandbox_url}/_sandbox/faults",
        json={"kind": "latency", "ms": PROVIDER_LATENCY_MS, "dialect": "stripe"},
        timeout=5,
    ).raise_for_status()
