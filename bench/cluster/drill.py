"""The cluster drill's steps: throughput with 1, 2 and 3 worker hosts, then the faults
under steady traffic, then the checks against the provider's ledger."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from bench.cluster.hosts import WORKER_HOSTS, Cluster, running_cluster
from bench.cluster.network import Network
from bench.cluster.traffic import FINAL, Shoppers, created_times, final_times
from bench.drills.chaos_checks import invariants
from bench.drills.stack import STRIPE_QUEUE, Sweeper, api_customer


def run(
    net: Network,
    *,
    smoke: bool,
    workers_per_host: int,
    pay_rate: float,
    backlog: int,
    settle_s: float,
) -> dict[str, Any]:
    say = narrator()
    with (
        running_cluster(net, workers_per_host) as cluster,
        shopping(cluster, "cluster") as (
            reader,
            shoppers,
        ),
    ):
        say(f"{len(net.hosts)} hosts up: " + ", ".join(f"{h} {net.address(h)}" for h in net.hosts))
        results: dict[str, Any] = {"workers_per_host": workers_per_host}
        if not smoke:
            say("throughput with 1, 2 and 3 worker hosts")
            results["scaling"] = scaling(cluster, reader, shoppers, backlog)
        say(f"faults under {pay_rate:g} payments/s")
        faults = under_faults(cluster, reader.app, shoppers, pay_rate, smoke)
        say("settling")
        results["settle_s"] = settle(reader, settle_s)
        say("checking against the provider's ledger")
        results["faults"] = _measured(faults, reader.app)
        results.update(checked(cluster, reader, shoppers))
        return results


@contextmanager
def shopping(cluster: Cluster, label: str) -> Iterator[tuple[Sweeper, Shoppers]]:
    """The drill's reader (its app, the checks) and four API customers' shoppers, with
    each host's supervisord running; stopped afterwards."""
    reader = Sweeper(cluster, grace_s=4)  # type: ignore[arg-type]  # the cluster stands in for the stack (same attributes)
    done = threading.Event()
    supervising = threading.Thread(target=supervise, args=(cluster, done), daemon=True)
    supervising.start()
    try:
        reader.cli("seed")
        tokens = [api_customer(reader, f"{label}-{i}@example.com") for i in range(4)]
        yield reader, Shoppers(cluster, tokens)
    finally:
        done.set()
        supervising.join(timeout=10)
        reader.close()


def checked(cluster: Cluster, reader: Sweeper, shoppers: Shoppers) -> dict[str, Any]:
    """The chaos drill's invariants against the provider's ledger, the clients' retries,
    the programs restarted, and how many payments are not final."""
    found: dict[str, Any] = invariants(cluster, reader)  # type: ignore[arg-type]  # the cluster stands in for the stack (same attributes)
    found["client_retries"], found["client_gave_up"] = shoppers.retried, shoppers.gave_up
    found["program_restarts"] = cluster.restarts()
    found["unresolved"] = sum(
        count for status, count in found["final_statuses"].items() if status not in FINAL
    )
    return found


def narrator() -> Any:
    """`say(what)`: a line with the seconds since the drill began."""
    started = time.monotonic()

    def say(what: str) -> None:
        print(f"[{time.monotonic() - started:6.1f} s] {what}", flush=True)

    return say


def supervise(cluster: Cluster, done: threading.Event) -> None:
    """Each host's supervisord: a program that exits is started again within a second."""
    while not done.wait(1.0):
        cluster.supervise()


def scaling(cluster: Cluster, reader: Sweeper, shoppers: Shoppers, backlog: int) -> dict[str, Any]:
    """Payments settled per second with the payment workers of 1, 2 and 3 hosts: a backlog
    made while RQ is suspended, then released; the rate between 10 % and 90 % settled."""
    rows: dict[str, Any] = {}
    for hosts in (1, 2, 3):
        rows[str(hosts)] = _settle_rate(cluster, reader, shoppers, backlog, hosts)
    one, three = rows["1"]["per_s"], rows["3"]["per_s"]
    rows["scaling_3_vs_1"] = round(three / one, 2) if one and three else None
    return rows


def _settle_rate(
    cluster: Cluster, reader: Sweeper, shoppers: Shoppers, backlog: int, hosts: int
) -> dict[str, Any]:
    """Add the hosts' payment workers up to `hosts`, make a backlog while RQ is suspended,
    release it and time it."""
    from rq import Queue, Worker
    from rq.suspension import resume, suspend

    from extensions import redis_client

    with reader.app.app_context():
        suspend(redis_client.client)
    for index, host in enumerate(WORKER_HOSTS):
        if index >= hosts:
            cluster.stop_payment_workers(host)
        elif not cluster.payment_workers(host):
            cluster.start_payment_workers(host)  # it starts suspended: nothing taken yet
    pids = {p.proc.pid for h in WORKER_HOSTS for p in cluster.payment_workers(h) if p.proc}
    with reader.app.app_context():
        queue = Queue(STRIPE_QUEUE, connection=redis_client.client)
        _wait(lambda: pids <= {w.pid for w in Worker.all(queue=queue)})
    ids = shoppers.backlog(backlog)
    with reader.app.app_context():
        resume(redis_client.client)
    _wait(lambda: len(final_times(reader.app, ids)) == len(ids), timeout_s=180)
    done = sorted(final_times(reader.app, ids).values())
    low, high = int(0.1 * len(done)), int(0.9 * len(done)) - 1
    span = (done[high] - done[low]).total_seconds()
    return {"payments": len(done), "per_s": round((high - low) / span, 1) if span > 0 else None}


def under_faults(
    cluster: Cluster, app: Any, shoppers: Shoppers, pay_rate: float, smoke: bool
) -> list[dict[str, Any]]:
    """Steady traffic through both web hosts while, in order: worker-1 is cut off, the
    Redis primary stops, web-1 stops (smoke: the Redis failover only)."""
    stop = threading.Event()
    traffic = threading.Thread(target=shoppers.steady, args=(pay_rate, stop))
    traffic.start()
    log: list[dict[str, Any]] = []
    try:
        time.sleep(3 if smoke else 5)
        if not smoke:
            log.append(cut_worker(cluster, app, "worker-1", hold_s=20))
            time.sleep(6)
        log.append(redis_failover(cluster))
        time.sleep(6 if smoke else 10)
        if not smoke:
            log.append(lost_host(cluster, "web-1", shoppers))
            time.sleep(8)
    finally:
        stop.set()
        traffic.join()
    return log


def cut_worker(cluster: Cluster, app: Any, host: str, hold_s: float) -> dict[str, Any]:
    """Pull the host's cable while its workers are charging; put it back after hold_s."""
    held: list[int] = []
    deadline = time.monotonic() + 15
    while not held and time.monotonic() < deadline:
        held = _charging_on(cluster, app, host)
        time.sleep(0.05)
    at = _now()
    cluster.net.cut(host)
    time.sleep(hold_s)
    cluster.net.mend(host)
    return {"fault": f"{host} cut off for {hold_s:.0f} s", "at": at, "held": held}


def redis_failover(cluster: Cluster) -> dict[str, Any]:
    """Stop the Redis primary (SIGKILL); the Sentinels promote the replica."""
    group = cluster.sentinel
    old = group.primary_address()
    primary = group.primary()
    replica = next(r for r in group.redis if r is not primary)
    in_sync = _replica_in_sync(primary, replica)  # what the promoted one will know
    at, started = _now(), time.monotonic()
    primary.stop(kill=True)
    _wait(lambda: group.primary_address() not in (old, None), timeout_s=60)
    return {
        "fault": "Redis primary stopped",
        "at": at,
        "promoted_after_s": round(time.monotonic() - started, 1),
        "replica_in_sync": in_sync,
        # RQ's suspension key (the scaling step's) on the promoted replica: would stop all.
        "suspended_after": _suspended(group.primary()),
    }


def _suspended(server: Any) -> bool:
    from redis import Redis

    return bool(Redis(server.host, server.port, socket_timeout=2).exists("rq:suspended"))


def _replica_in_sync(primary: Any, replica: Any) -> bool:
    """The replica's link is up and it has every write the primary acknowledged."""
    from redis import Redis

    lead = Redis(primary.host, primary.port, socket_timeout=2).info("replication")
    follow = Redis(replica.host, replica.port, socket_timeout=2).info("replication")
    return bool(
        follow.get("master_link_status") == "up"
        and follow.get("slave_repl_offset", -1) >= lead.get("master_repl_offset", 0) - 1024
    )


def lost_host(cluster: Cluster, host: str, shoppers: Shoppers) -> dict[str, Any]:
    at, retried = _now(), shoppers.retried
    cluster.stop(host)
    time.sleep(3)
    return {"fault": f"{host} stopped", "at": at, "client_retries_3s": shoppers.retried - retried}


def settle(reader: Sweeper, settle_s: float) -> float | None:
    """Seconds until every payment is final or needs_review (the cluster's own sweeps)."""
    started = time.monotonic()
    while time.monotonic() - started < settle_s:
        created = created_times(reader.app)
        if created and len(final_times(reader.app)) == len(created):
            return round(time.monotonic() - started, 1)
        time.sleep(1)
    return None


def _measured(faults: list[dict[str, Any]], app: Any) -> list[dict[str, Any]]:
    """Per fault: seconds until a payment made after it settled (payments flowed again),
    and for a cut-off worker, until every payment it held settled."""
    finals, created = final_times(app), created_times(app)
    rows = []
    for fault in faults:
        at: datetime = fault["at"]
        after = [finals[p] for p, c in created.items() if c >= at and p in finals]
        row = {k: v for k, v in fault.items() if k not in ("at", "held")}
        row["flowed_again_s"] = round((min(after) - at).total_seconds(), 1) if after else None
        if "held" in fault:
            held = [finals.get(p) for p in fault["held"]]
            row["held_payments"] = len(held)
            row["held_settled_s"] = (
                round((max(held) - at).total_seconds(), 1)  # type: ignore[type-var,operator]  # max of datetimes
                if held and all(held)
                else None
            )
        rows.append(row)
    return rows


def _charging_on(cluster: Cluster, app: Any, host: str) -> list[int]:
    """Payments whose charge job runs on the host's workers right now."""
    from rq import Queue, Worker

    from extensions import redis_client

    pids = {p.proc.pid for p in cluster.payment_workers(host) if p.proc}
    with app.app_context():
        workers = Worker.all(queue=Queue(STRIPE_QUEUE, connection=redis_client.client))
        jobs = [w.get_current_job_id() for w in workers if w.pid in pids]
    return [int(m.group(1)) for j in jobs if j and (m := re.match(r"charge-(\d+)", j))]


def _wait(predicate: Any, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("the cluster did not get there in time")
        time.sleep(0.2)


def _now() -> datetime:
    from models.types import utcnow

    return utcnow()
