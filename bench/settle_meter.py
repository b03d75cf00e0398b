"""What bench.settle reads of a run: the CPU of every process on the host by kind, the
provider workers' memory, the database's counters, and the host's bound from them."""

from __future__ import annotations

import math
import os
import statistics
from pathlib import Path
from typing import Any

from bench.common import cpu_s, memory_mb
from bench.drills.stack import Stack

FINAL = "SELECT COUNT(*) FROM payments WHERE status IN ('succeeded', 'failed') AND id = ANY(:ids)"
# What follows a charge: its webhook events applied, its receipt sent.
FOLLOW_UPS = (
    "SELECT (SELECT COUNT(*) FROM processed_webhooks WHERE state = 'pending') "
    "+ (SELECT COUNT(*) FROM outbox WHERE status = 'pending')"
)


class Meter:
    """The CPU of every process on the host by kind (ours, and not ours: the sandbox,
    the mail sink, the load generator), the provider workers' peak memory and the
    database's commits and new connections, from its making to `stop`."""

    def __init__(self, stack: Stack) -> None:
        self.kinds, self.outside = _process_kinds(stack), _outside(stack)
        self.procs = len(self.kinds["provider workers"])
        self.before = self._cpu()
        self.counters_at_start = _database_counters()
        self.rss = self.pss = 0.0

    def _cpu(self) -> dict[str, float]:
        cpu = {kind: cpu_s(pids) for kind, pids in {**self.kinds, **self.outside}.items()}
        return {**cpu, "load generator": _own_cpu_s()}

    def sample(self) -> None:
        resident, proportional = memory_mb(self.kinds["provider workers"])
        self.rss, self.pss = max(self.rss, resident), max(self.pss, proportional)

    def stop(self, generator_cpu_s: float = 0.0) -> None:
        """The readings' end; `generator_cpu_s`: a load generator's own process."""
        self.sample()
        after = self._cpu()
        after["load generator"] += generator_cpu_s
        self.spent = {kind: after[kind] - self.before[kind] for kind in after}
        commits, opened = _database_counters()
        self.commits = commits - self.counters_at_start[0]
        self.connections_opened = opened - self.counters_at_start[1]

    def row(
        self,
        shape: str,
        slots: int,
        latency_ms: int,
        ids: list[int],
        seconds: float,
        latencies: list[float],
        *,
        at_once: bool = False,
    ) -> dict[str, Any]:
        """The run's figures; `at_once`: every payment was enqueued at its start (a burst,
        whose slots settle it in waves), not brought at a steady rate."""
        statuses = payment_statuses(ids)
        settled = max(1, statuses.get("succeeded", 0))
        per_payment = {kind: round(s * 1000 / settled, 2) for kind, s in self.spent.items()}
        cpu_ms = {kind: per_payment[kind] for kind in self.kinds}
        outside_ms = {kind: v for kind, v in per_payment.items() if kind not in self.kinds}
        rate = len(ids) / seconds
        total_ms = sum(per_payment.values())
        burst = len(ids) if at_once else None
        bound = _bound(self.procs * slots, latency_ms, total_ms, burst)
        return {
            "shape": shape,
            "processes": self.procs,
            "slots": slots,
            "latency_ms": latency_ms,
            "payments": len(ids),
            "burst": burst,
            "statuses": statuses,
            "seconds": round(seconds, 2),
            "settled_per_s": round(rate, 1),
            "latency_p50_s": round(statistics.median(latencies), 2),
            "latency_p95_s": round(statistics.quantiles(latencies, n=20)[18], 2),
            "worker_rss_mb": round(self.rss, 1),
            "worker_pss_mb": round(self.pss, 1),
            # Little's law: calls in flight = settled/s x the provider's latency (what the
            # run kept in flight; below the slots when the host's CPU is the limit). Per GB
            # of RSS (as first measured) and of PSS (the memory the host gives them).
            "in_flight_per_gb": round(rate * latency_ms / 1000 / (self.rss / 1024), 1),
            "slots_per_gb": round(self.procs * slots / (self.rss / 1024), 1),
            "in_flight_per_gb_pss": round(rate * latency_ms / 1000 / (self.pss / 1024), 1),
            "slots_per_gb_pss": round(self.procs * slots / (self.pss / 1024), 1),
            "cpu_ms_per_payment_by_kind": cpu_ms,
            "cpu_ms_per_payment": round(sum(cpu_ms.values()), 2),
            # Not ours, on the same cores: the provider's sandbox, the mail sink, the load
            # generator; and the database's commits and new connections.
            "outside_cpu_ms_per_payment": outside_ms,
            "commits_per_s": round(self.commits / seconds, 1),
            "connections_opened": self.connections_opened,
            **bound,
            "of_bound": round(rate / bound["bound_per_s"], 2),
            # Payments whose charge timed out on the way (unknown, then looked up): a
            # provider answering late, as a starved sandbox does.
            "through_unknown": _through_unknown(ids),
        }


def _bound(
    slots: int, latency_ms: int, cpu_ms_per_payment: float, burst: int | None = None
) -> dict[str, Any]:
    """What the host can settle at most: the slots over the provider's latency, and its
    cores over the CPU a payment took of every process on them (ours and not). A `burst`
    of payments enqueued at once is settled in waves of `slots` calls, each the latency
    long: 300 on 64 slots at 1 s take five waves, 60/s at most, not 64."""
    by_slots = slots * 1000 / latency_ms
    if burst:
        by_slots = burst * 1000 / (math.ceil(burst / slots) * latency_ms)
    by_cpu = (os.cpu_count() or 1) * 1000 / cpu_ms_per_payment
    return {
        "bound_by_slots_per_s": round(by_slots, 1),
        "bound_by_cpu_per_s": round(by_cpu, 1),
        "bound_per_s": round(min(by_slots, by_cpu), 1),
        "bound": "slots" if by_slots < by_cpu else "cpu",
    }


def straight_bound(row: dict[str, Any], baseline_cpu_ms: float) -> dict[str, Any]:
    """The most this host could settle if our processes took the straight-line baseline's
    CPU per payment, the processes not ours (sandbox, mail sink, load generator) taking
    what they took in the run; and the run's figure as a share of it."""
    outside_ms = sum(row["outside_cpu_ms_per_payment"].values())
    slots = row["processes"] * row["slots"]
    cpu_ms = baseline_cpu_ms + outside_ms
    bound = _bound(slots, row["latency_ms"], cpu_ms, row["burst"])["bound_per_s"]
    return {
        "straight_bound_per_s": bound,
        "of_straight_bound": round(row["settled_per_s"] / bound, 2),
    }


def _process_kinds(stack: Stack) -> dict[str, list[int]]:
    def pids(prefix: str) -> list[int]:
        return [p.proc.pid for p in stack.programs if p.name.startswith(prefix) and p.proc]

    postmaster = []
    if stack.postgres is not None:
        pid_file = Path(stack.postgres.data_dir) / "postmaster.pid"
        postmaster = [int(pid_file.read_text().split()[0])]
    redis = [stack.redis.proc.pid] if stack.redis.proc else []
    return {
        "web": pids("web"),
        "provider workers": pids("worker-stripe"),
        "maintenance": pids("worker-maintenance"),
        "notifications": pids("worker-notifications"),
        "postgres": postmaster,
        "redis": redis,
    }


def _outside(stack: Stack) -> dict[str, list[int]]:
    programs = {p.name: [p.proc.pid] for p in stack.programs if p.proc}
    return {"sandbox": programs["sandbox"], "mail sink": programs["mail"]}


def _own_cpu_s() -> float:
    """This process alone (its children are the stack's programs, counted by kind)."""
    own = os.times()
    return own.user + own.system


def _database_counters() -> tuple[int, int]:
    """(transactions committed, connections opened) of the database so far."""
    from sqlalchemy import text

    from extensions import db

    row = db.session.execute(
        text(
            "SELECT xact_commit, sessions FROM pg_stat_database WHERE datname = current_database()"
        )
    ).one()
    db.session.commit()
    return int(row[0]), int(row[1])


def payment_statuses(ids: list[int] | None = None) -> dict[str, int]:
    from sqlalchemy import text

    from extensions import db

    rows = db.session.execute(
        text(
            "SELECT status, COUNT(*) FROM payments "
            "WHERE CAST(:ids AS integer[]) IS NULL OR id = ANY(:ids) GROUP BY status"
        ),
        {"ids": ids},
    )
    return {status: n for status, n in rows}


def _through_unknown(ids: list[int]) -> int:
    from sqlalchemy import text

    from extensions import db

    found = db.session.scalar(
        text(
            "SELECT COUNT(DISTINCT payment_id) FROM payment_transitions "
            "WHERE payment_id = ANY(:ids) AND to_status = 'unknown'"
        ),
        {"ids": ids},
    )
    db.session.commit()
    return int(found or 0)


def final_at(ids: list[int]) -> dict[int, float]:
    """When each final payment's final transition was written (epoch seconds)."""
    from sqlalchemy import text

    from extensions import db

    rows = db.session.execute(
        text(
            "SELECT payment_id, EXTRACT(EPOCH FROM MAX(created_at)) FROM payment_transitions "
            "WHERE payment_id = ANY(:ids) AND to_status IN ('succeeded', 'failed') "
            "GROUP BY payment_id"
        ),
        {"ids": ids},
    ).all()
    db.session.commit()
    return {int(payment_id): float(at) for payment_id, at in rows}


def counted(query: str, ids: list[int]) -> int:
    """What `query` (FINAL, FOLLOW_UPS) counts now."""
    from sqlalchemy import text

    from extensions import db

    found = db.session.scalar(text(query), {"ids": ids})
    db.session.commit()
    return int(found or 0)
