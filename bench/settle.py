"""Settlement on one worker host: payments settled per second at a provider latency,
the time from the enqueue (or the customer's request) to final, the provider workers'
memory and calls in flight per GB, and CPU per settled payment of every process on the
host by kind, each shape beside its straight-line baseline in one run.

    python -m bench.settle [--payments 300] [--latencies-ms 300,1000]
                           [--shapes threads,api@100,api@30] [--through-api] [--slots 64]

The whole system runs as in production (bench/drills/stack.py: sandbox, gunicorn, RQ
workers, PostgreSQL, Redis); the sandbox answers every Stripe request after the given
latency. The shapes:

  - threads: one threaded provider worker (`--slots`, by default Stripe's); N top-ups
    never sent are inserted at once and their charges enqueued; processes: six
    one-call workers, the same way;
  - api@RATE (`--through-api`: the two below): the shop's customers (bench/shoppers.py,
    a process of its own) create orders and pay them through the JSON API, RATE new
    ones a second, and ask for each payment as the status page does until it is final
    (bench/settle_api.py); api@100 is what the goal asks of the host, api@30 a rate it
    carries with room to spare (its latency is the customers' own, not a queue's).

Each waits until all are final and their webhooks and receipts are done, after a
warm-up not counted (each process's first jobs compile its templates and statements).
CPU is read from /proc (user + system of each program and its children, PostgreSQL's
and Redis' too), and set beside the straight-line baseline's (bench/settle_baseline.py,
and bench/settle_baseline_api.py for the customers: the same work in one plain process,
after the same warm-up), measured right before each configuration (the shared cores'
speed drifts within a run). The processes that are not ours (the sandbox, the mail sink,
the load generator) are read too, and with them the host's bound: its cores over the
CPU a payment took of every process, and over what it would take at the baseline's CPU
(the most any code could settle here), beside the slots over the latency. The goals
(`goals`) are printed with their figures; the last line is JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

from bench.common import bulk_topups, write_results
from bench.drills.stack import STRIPE_QUEUE, Stack, Sweeper, running_stack
from bench.settle_api import through_api
from bench.settle_baseline import WARMUP, baseline
from bench.settle_baseline_api import baseline_api
from bench.settle_meter import (
    FINAL,
    FOLLOW_UPS,
    Meter,
    counted,
    final_at,
    payment_statuses,
    straight_bound,
)
from providers.registry import spec_for

# (worker processes, slots each) on the provider queue of one host.
SHAPES = {"processes": (6, 1), "threads": (1, 64)}  # threads: --slots, by default Stripe's
# The customers through the API: as many as the goal asks for (100 a second), and as many
# as the host carries with room to spare (their latency: a host asked for about as much
# as it settles forms a queue now and then; at 40 a second this one ran at 0.73-0.99 of
# its bound, and a third run's p95 was 2.99 s against 1.06 and 1.85).
ASKED, CARRIED = "api@100", "api@30"
THROUGH_API = f"{ASKED},{CARRIED}"
SETTINGS = {"PENDING_SWEEP_GRACE_S": "3600"}  # nothing but the charges moves them


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--payments", type=int, default=300)
    parser.add_argument("--latencies-ms", default="300,1000")
    parser.add_argument("--timeout-s", type=float, default=600)
    parser.add_argument(
        "--shapes",
        default=f"threads,{THROUGH_API}",
        help="any of: processes, threads (top-ups enqueued at once), api@RATE (RATE customers "
        "a second through the API, a threaded provider worker)",
    )
    parser.add_argument(
        "--through-api", action="store_true", help=f"only the customers': {THROUGH_API}"
    )
    parser.add_argument("--slots", type=int, default=spec_for("stripe").slots)
    args = parser.parse_args()
    rows, baselines = [], []
    shapes = {**SHAPES, "threads": (1, args.slots)}
    for latency_ms in [int(v) for v in args.latencies_ms.split(",")]:
        for shape in (THROUGH_API if args.through_api else args.shapes).split(","):
            name, _, rate = shape.partition("@")
            procs, slots = shapes.get(name, (1, args.slots))
            # The same durable work done straight-line (bench/settle_baseline.py), right
            # before each configuration: the shared cores' speed drifts within a run.
            if name == "api":
                straight = baseline_api(args.payments, float(rate))
                row = settle_api(slots, latency_ms, args.payments, float(rate), args.timeout_s)
                row["shape"] = shape
            else:
                straight = baseline(args.payments)
                row = settle(shape, procs, slots, latency_ms, args.payments, args.timeout_s)
            baselines.append(straight)
            row["baseline_cpu_ms_per_payment"] = straight["cpu_ms_per_payment"]
            row["cpu_ratio"] = round(row["cpu_ms_per_payment"] / straight["cpu_ms_per_payment"], 2)
            row.update(straight_bound(row, straight["cpu_ms_per_payment"]))
            rows.append(row)
            print(
                f"{shape:9} {procs} x {slots:2} slots at {latency_ms:4} ms: "
                f"{row['settled_per_s']:6.1f} settled/s, p50 {row['latency_p50_s']} s "
                f"p95 {row['latency_p95_s']} s, provider workers {row['worker_rss_mb']} MB RSS "
                f"({row['worker_pss_mb']} PSS), {row['in_flight_per_gb']} calls in flight per "
                f"GB ({row['in_flight_per_gb_pss']} per GB of PSS), CPU per payment "
                f"{row['cpu_ms_per_payment']} ms ({row['cpu_ratio']}x the baseline's "
                f"{straight['cpu_ms_per_payment']} ms just before); outside it "
                f"{row['outside_cpu_ms_per_payment']} ms; {row['commits_per_s']} commits/s, "
                f"{row['connections_opened']} connections opened, {row['through_unknown']} "
                f"payments through unknown; the host's bound "
                f"{row['bound_per_s']}/s by {row['bound']} (slots {row['bound_by_slots_per_s']}, "
                f"CPU {row['bound_by_cpu_per_s']}): {row['of_bound']} of it; at the baseline's "
                f"CPU {row['straight_bound_per_s']}/s: {row['of_straight_bound']} of that",
                flush=True,
            )
    summary = {**_ratios(rows), "goals": goals(rows)}
    for goal, verdict in summary["goals"].items():
        print(f"{goal}: {verdict}")
    results = {"rows": rows, "baselines": baselines, "summary": summary}
    print(f"results in {write_results('settle', results)}")
    print(json.dumps(summary))


def settle_api(
    slots: int, latency_ms: int, count: int, rate: float, timeout_s: float
) -> dict[str, Any]:
    with (
        latency_stack(1, slots, latency_ms) as (stack, sweeper),
        tempfile.TemporaryDirectory() as tmp,
    ):
        return through_api(
            stack,
            sweeper,
            Path(tmp),
            slots,
            latency_ms,
            count,
            rate,
            timeout_s,
        )


def settle(
    shape: str, procs: int, slots: int, latency_ms: int, count: int, timeout_s: float
) -> dict[str, Any]:
    from extensions import db

    with latency_stack(procs, slots, latency_ms) as (stack, _):
        # A warm-up first, not counted (each process's first jobs compile its
        # templates and statements: a long-running system's steady state).
        warm = bulk_topups(db, WARMUP, "pending", f"warm{shape}{latency_ms}", is_sent=False)
        _settle_all(stack, shape, warm, time.monotonic(), timeout_s, lambda: None)
        ids = bulk_topups(db, count, "pending", f"{shape}{latency_ms}", is_sent=False)
        meter = Meter(stack)
        started, started_at = time.monotonic(), time.time()
        seconds = _settle_all(stack, shape, ids, started, timeout_s, meter.sample)
        meter.stop()
        latencies = [at - started_at for at in final_at(ids).values()]
        return meter.row(shape, slots, latency_ms, ids, seconds, latencies, at_once=True)


@contextmanager
def latency_stack(procs: int, slots: int, latency_ms: int) -> Iterator[tuple[Stack, Sweeper]]:
    """The system with `procs` provider workers of `slots` each, its sandbox answering
    Stripe after `latency_ms`; inside the context of the bench's app (the sweeper's: its
    sweeps do not run unless ticked)."""
    with running_stack(queue_workers=procs, queue_slots=slots, settings=SETTINGS) as stack:
        _first_served(stack)
        sweeper = Sweeper(stack, grace_s=3600, every_s=1)
        try:
            requests.post(
                f"{stack.sandbox_url}/_sandbox/faults",
                json={"kind": "latency", "ms": latency_ms, "dialect": "stripe"},
                timeout=10,
            ).raise_for_status()
            with sweeper.app.app_context():
                yield stack, sweeper
        finally:
            sweeper.close()


def _first_served(stack: Stack) -> None:
    """The sandbox and the mail sink stand for the world outside the host: their answers
    must not wait for our processes' CPU on the shared cores (a provider starved by our
    load answers late, and our clients' timeouts would measure the bench, not the shop).
    They are served first where this process may say so (root); their CPU is counted
    all the same."""
    for program in stack.programs:
        if program.name in ("sandbox", "mail") and program.proc is not None:
            with contextlib.suppress(PermissionError):
                os.setpriority(os.PRIO_PROCESS, program.proc.pid, -10)


def _settle_all(
    stack: Stack,
    shape: str,
    ids: list[int],
    started: float,
    timeout_s: float,
    sample: Callable[[], None],
) -> float:
    """Enqueue the payments' charges and wait until all are final (seconds taken), then
    until their webhooks and emails are done. No sweep runs here (Sweeper.tick): the
    stack's own workers do all the work, so all of its CPU is counted."""
    from services.movements.kinds import SEND_JOB
    from services.payments.kind import CHARGE
    from services.platform.queues import named_queue

    queue = named_queue(STRIPE_QUEUE)
    with queue.connection.pipeline() as pipe:  # one round trip for all
        for i in ids:
            queue.enqueue(SEND_JOB, CHARGE.name, i, job_id=CHARGE.send_job_id(i), pipeline=pipe)
        pipe.execute()
    while counted(FINAL, ids) < len(ids):
        sample()
        if time.monotonic() - started > timeout_s:
            _keep_evidence(stack, shape)
            raise SystemExit(f"{shape}: not settled in {timeout_s} s")
        time.sleep(0.2)
    seconds = time.monotonic() - started
    while counted(FOLLOW_UPS, ids):  # what follows a charge: its webhook, its email
        if time.monotonic() - started > timeout_s:
            _keep_evidence(stack, shape)
            raise SystemExit(f"{shape}: webhooks or emails left after {timeout_s} s")
        time.sleep(0.2)
    return seconds


def _keep_evidence(stack: Stack, shape: str) -> None:
    """A run that did not finish: the programs' logs, the payments' statuses and the RQ
    jobs that failed, kept in bench/results/ for whoever looks next."""
    from rq import Queue

    from extensions import redis_client

    kept = Path(write_results(f"settle-{shape}-failed", {"statuses": payment_statuses()})).parent
    for program in stack.programs:
        shutil.copy(program.log, kept / f"settle-{shape}-{program.name}.log")
    for name in (STRIPE_QUEUE, "maintenance", "notifications"):
        queue = Queue(name, connection=redis_client.client)
        print(f"{name}: {len(queue)} queued, {queue.failed_job_registry.count} failed", flush=True)
    print(f"logs and statuses kept in {kept}", flush=True)


def goals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Issue 53's goals, each with its figures and whether this run met it, on the shapes
    it is about: at 1 s, >= 100 settled/s or >= 0.8 of the host's bound at the baseline's
    CPU (the top-ups enqueued at once, and the customers at 100 a second); CPU per
    payment <= 1.8x the baseline (every shape and latency); p50 <= 1.5 s and p95 <= 2.5 s
    from the enqueue or the customer's request to final at 1 s (the customers at a rate
    the host carries; the others are shown: theirs is the time in the queue); >= 300
    calls in flight per GB of the provider workers' RSS at 1 s (the top-ups at once)."""
    found: dict[str, Any] = {}
    for row in rows:
        shape, at = row["shape"], f"{row['latency_ms']} ms"
        found[f"CPU at {at} ({shape})"] = {
            "ratio": row["cpu_ratio"],
            "met": row["cpu_ratio"] <= 1.8,
        }
        if row["latency_ms"] != 1000:
            continue
        rate, share = row["settled_per_s"], row["of_straight_bound"]
        if shape in ("threads", ASKED):
            found[f"settled at {at} ({shape})"] = {
                "settled_per_s": rate,
                "straight_bound_per_s": row["straight_bound_per_s"],
                "of_it": share,
                "met": rate >= 100 or share >= 0.8,
            }
        p50, p95 = row["latency_p50_s"], row["latency_p95_s"]
        found[f"latency at {at} ({shape})"] = {
            "p50_s": p50,
            "p95_s": p95,
            "met": p95 <= 2.5 and p50 <= 1.5 if shape == CARRIED else None,
        }
        if shape == "threads":
            found[f"calls in flight per GB of RSS at {at} ({shape})"] = {
                "per_gb": row["in_flight_per_gb"],
                "met": row["in_flight_per_gb"] >= 300,
            }
    return found


def _ratios(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Threads against processes at each latency: settled/s, memory, calls per GB."""
    summary: dict[str, Any] = {"benchmark": "settle"}
    for latency in sorted({r["latency_ms"] for r in rows}):
        by = {r["shape"]: r for r in rows if r["latency_ms"] == latency}
        both: dict[str, Any] = {
            field: {shape: row[field] for shape, row in by.items()}
            for field in (
                "settled_per_s",
                "latency_p50_s",
                "latency_p95_s",
                "worker_rss_mb",
                "worker_pss_mb",
                "in_flight_per_gb",
                "slots_per_gb",
                "in_flight_per_gb_pss",
                "slots_per_gb_pss",
                "cpu_ms_per_payment",
                "baseline_cpu_ms_per_payment",
                "cpu_ratio",
                "outside_cpu_ms_per_payment",
                "commits_per_s",
                "bound_per_s",
                "bound",
                "straight_bound_per_s",
                "of_straight_bound",
            )
        }
        if "threads" in by and "processes" in by:
            both["settled_ratio"] = round(
                by["threads"]["settled_per_s"] / by["processes"]["settled_per_s"], 2
            )
        summary[f"at_{latency}ms"] = both
    return summary


if __name__ == "__main__":
    main()
