"""The chaos drill: payments, top-ups and wallet spending while faults hit every part.

    python -m bench.drills chaos [--seed N] [--operations 200] [--customers 4]

Faults are drawn from a seeded random generator, one every `fault_every_s`, each
kind at least once before any repeats: provider errors (before, after and stored),
a balancer's 503/429 after the charge was made, our metadata removed from what Stripe
answers, hangs, resets and commit-then-timeout; duplicated, reordered and delayed
webhooks; SIGKILL of a random worker (restarted like supervisor would); a Redis restart (which loses
every key) and a flush; a short database outage. Customers behave like good API
clients: they retry a request that failed in transit or with a 5xx, with the
same Idempotency-Key.

At the end, with every fault cleared, the drill waits until every payment is
final or `needs_review` and checks the invariants of DESIGN.md. A failing run
prints its seed; `--seed` replays the same fault schedule and the same customer
choices (thread timing still varies).
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from typing import Any

import requests

from bench.common import RESULTS_DIR, write_results
from bench.drills import report
from bench.drills.chaos_books import books_days
from bench.drills.chaos_checks import disputes_caught_up, invariants, print_report
from bench.drills.chaos_customers import Customer, Disputer, Traffic, shop
from bench.drills.stack import Stack, Sweeper, api_customer, running_stack, settle
from bench.drills.traffic import Authenticator, Observations, Refunder, _viewer

FINAL = {"succeeded", "failed", "needs_review"}
FAULT_KINDS = (
    "provider_errors",
    "provider_errors_after",
    "provider_errors_stored",
    "provider_unavailable_after",
    "metadata_removed",
    "search_lag",
    "provider_hang",
    "provider_resets",
    "commit_timeout",
    "webhook_duplicate",
    "webhook_reorder",
    "webhook_delay",
    "kill_worker",
    "redis_restart",
    "redis_flush",
    "database_outage",
)
OPERATIONS = ("card", "topup", "wallet_order", "debit")
OPERATION_WEIGHTS = (4, 2, 2, 2)

# Compressed time, same ratios as production (see bench/drills/outage.py).
CHAOS_SLOTS = 4  # calls in flight per provider worker process
SETTINGS = {
    "PROVIDER_CONNECT_TIMEOUT_S": "1",
    "PROVIDER_READ_TIMEOUT_S": "2",
    "PROVIDER_CALL_BUDGET_S": "5",
    "PROVIDER_MAX_RETRIES": "1",
    "BREAKER_FAILURE_THRESHOLD": "5",
    "BREAKER_OPEN_S": "2",
    "BREAKER_OPEN_MAX_S": "6",
    "BREAKER_MIN_CALLS": "20",
    "BREAKER_SLOW_CALL_S": "1.5",
    "RECONCILE_DELAYS_S": "1,2,4,8",
    # Escalate to review after about 25 s of "still unknown", well inside the settle time.
    "RECONCILE_MAX_ATTEMPTS": "5",
    "SEND_DEFER_S": "1",
    # How long a request may still run at Stripe: after it, the complete list of the
    # intents created around our sends (never search: it lags, an hour during the
    # search_lag fault) proves "never charged", so a lost charge resolves to failed.
    "STRIPE_SETTLE_S": "5",
    # The sandbox settles Braintree's sales after 10 s (a day in production): a partial
    # refund of one not settled yet asks again after 5 s, not an hour.
    "BRAINTREE_UNSETTLED_RETRY_S": "5",
    "BRAINTREE_SETTLE_S": "10",
    "PENDING_SWEEP_GRACE_S": "3",
    # A 3-D Secure payment whose customer never answered is cancelled inside the settle time.
    "SCA_TIMEOUT_S": "20",
}


class Chaos:
    """Injects one fault at a time into a running stack and takes it away again."""

    def __init__(self, stack: Stack, rng: random.Random) -> None:
        self.stack, self.rng = stack, rng
        self.log: list[dict[str, Any]] = []

    def schedule(self, count: int) -> list[str]:
        """Every kind once in a seeded order, then seeded draws."""
        kinds = list(FAULT_KINDS)
        self.rng.shuffle(kinds)
        return (kinds + [self.rng.choice(FAULT_KINDS) for _ in range(count)])[:count]

    def inject(self, kind: str, at_s: float) -> None:
        detail = getattr(self, f"_{kind}")()
        self.log.append({"at_s": round(at_s, 1), "fault": kind, **(detail or {})})

    def clear(self) -> None:
        with contextlib.suppress(requests.RequestException):
            requests.delete(f"{self.stack.sandbox_url}/_sandbox/faults", timeout=5)

    def calm(self) -> None:
        """No fault but the provider's everyday 100 ms latency."""
        self.clear()
        requests.post(
            f"{self.stack.sandbox_url}/_sandbox/faults",
            json={"kind": "latency", "ms": 100},
            timeout=5,
        )

    def _fault(self, **spec: Any) -> dict[str, Any]:
        """The fault at both providers, each in its own words (Stripe creates an intent,
        Braintree a sale)."""
        for dialect in ("stripe", "braintree"):
            endpoint = spec.get("endpoint")
            translated = {"endpoint": "sale"} if dialect == "braintree" and endpoint else {}
            requests.post(
                f"{self.stack.sandbox_url}/_sandbox/faults",
                json={"dialect": dialect, **spec, **translated},
                timeout=5,
            ).raise_for_status()
        return spec

    def _provider_errors(self) -> dict[str, Any]:
        return self._fault(kind="error", status=self.rng.choice((500, 502, 503)), rate=0.5)

    def _provider_errors_after(self) -> dict[str, Any]:
        return self._fault(kind="error", status=500, phase="after", rate=0.4)

    def _provider_errors_stored(self) -> dict[str, Any]:
        # Processed, and the 500 stored under the key: every replay answers it too.
        return self._fault(kind="error", status=500, phase="stored", rate=0.4, endpoint="create")

    def _provider_unavailable_after(self) -> dict[str, Any]:
        # A balancer's 503 or 429 page after the provider made the charge: Braintree keeps
        # no keys, so only the search before any repeat keeps it from a second sale.
        status = self.rng.choice((503, 429))
        return self._fault(
            kind="error", status=status, phase="after", html=True, rate=0.4, endpoint="create"
        )

    def _metadata_removed(self) -> dict[str, Any]:
        # An operator cleared our metadata in Stripe's Dashboard: what lookups read of an
        # intent names no payment of ours (a match never rests on it alone).
        spec = {"kind": "tamper", "field": "metadata.payment_id", "value": None}
        for endpoint in ("retrieve", "search", "list"):
            requests.post(
                f"{self.stack.sandbox_url}/_sandbox/faults",
                json={"dialect": "stripe", "endpoint": endpoint, **spec},
                timeout=5,
            ).raise_for_status()
        return spec

    def _search_lag(self) -> dict[str, Any]:
        # Stripe's search during an outage: an hour behind (never proof of absence).
        return self._fault(kind="search_lag", seconds=3600)

    def _provider_hang(self) -> dict[str, Any]:
        return self._fault(kind="hang", seconds=self.rng.choice((3, 5)), rate=0.5)

    def _provider_resets(self) -> dict[str, Any]:
        return self._fault(kind=self.rng.choice(("reset_before", "reset_after")), rate=0.4)

    def _commit_timeout(self) -> dict[str, Any]:
        return self._fault(kind="commit_timeout", hold_s=3, rate=0.5, endpoint="create")

    def _webhook_duplicate(self) -> dict[str, Any]:
        return self._fault(kind="webhook_duplicate", copies=self.rng.choice((2, 3)))

    def _webhook_reorder(self) -> dict[str, Any]:
        return self._fault(kind="webhook_reorder", max_delay_s=2.0)

    def _webhook_delay(self) -> dict[str, Any]:
        return self._fault(kind="webhook_delay", seconds=3)

    def _kill_worker(self) -> dict[str, Any]:
        victim = self.rng.choice(self.stack.workers)
        victim.kill()  # SIGKILL, work horse included; restarted by the next supervise()
        return {"program": victim.name}

    def _redis_restart(self) -> dict[str, Any]:
        self.stack.redis.stop(kill=True)
        time.sleep(1)
        self.stack.redis.start()  # empty: queues, scheduled jobs and breaker state are gone
        return {"down_s": 1}

    def _redis_flush(self) -> dict[str, Any]:
        import redis

        client = redis.Redis.from_url(self.stack.redis_url)
        client.flushall()
        client.close()
        return {}

    def _database_outage(self) -> dict[str, Any]:
        down_s = 2
        if self.stack.postgres is not None:
            # "fast": clients are cut off and open transactions abort. Not "immediate": the
            # throwaway cluster runs with fsync and synchronous_commit off, so a crash there
            # could lose commits a production server would have kept.
            self.stack.postgres.stop("fast")
            time.sleep(down_s)
            self.stack.postgres.start()
            return {"down_s": down_s, "how": "postgres stopped (fast) and started"}
        return {"skipped": "DRILL_DATABASE_URL is not ours to stop"}


def run(
    seed: int | None = None,
    operations: int = 200,
    customers: int = 4,
    fault_every_s: float = 3.0,
    settle_s: float = 120.0,
    publish: bool = False,
) -> dict[str, Any]:
    seed = seed if seed is not None else int.from_bytes(os.urandom(4), "big")
    print(f"chaos drill, seed {seed} (replay with --seed {seed})", flush=True)
    # Threaded provider workers (2 processes x 4 slots), as production runs them: the
    # faults hit calls in flight side by side in one process.
    with running_stack(settings=SETTINGS, queue_slots=CHAOS_SLOTS) as stack:
        results = drill(stack, seed, operations, customers, fault_every_s, settle_s)
    results["database"] = "postgres"
    print_report(results)
    name = "chaos-postgres"  # the name docs/ embeds (from when SQLite had a half too)
    results["report"] = str(
        report.write_report(
            RESULTS_DIR,
            name,
            f"Chaos drill, seed {seed}: every kind of fault, one at a time",
            {"This system": results["timeline"]},
        )
    )
    if publish:
        report.publish(RESULTS_DIR, name)
    print(f"results in {write_results(name, results)}, pictures in {results['report']}")
    return results


def drill(
    stack: Stack,
    seed: int,
    operations: int,
    customers: int,
    fault_every_s: float,
    settle_s: float,
) -> dict[str, Any]:
    """Traffic and faults against a running stack (started with SETTINGS); the findings."""
    rng = random.Random(seed)
    sweeper = Sweeper(stack, grace_s=int(SETTINGS["PENDING_SWEEP_GRACE_S"]), every_s=1)
    sweeper.cli("seed")
    tokens = [api_customer(sweeper, f"chaos-{i}@example.com") for i in range(customers)]
    traffic = Traffic()
    plans = [
        rng.choices(OPERATIONS, OPERATION_WEIGHTS, k=operations // customers)
        for _ in range(customers)
    ]
    bank = Authenticator(stack.web_url)
    shoppers = [
        Customer(stack.web_url, token, random.Random(rng.random()), traffic, bank)
        for token in tokens
    ]
    refunder = Refunder(sweeper.app, random.Random(rng.random()))
    disputer = Disputer(stack.sandbox_url)
    stop_bank = threading.Event()
    authenticating = threading.Thread(target=bank.run, args=(stop_bank,), daemon=True)
    authenticating.start()
    chaos = Chaos(stack, rng)
    # A customer browsing, ten pages a second, and what the dashboard would show.
    pages, stop_viewing = Observations(), threading.Event()
    viewing = threading.Thread(target=_viewer, args=(stack.web_url, pages, stop_viewing))
    viewing.start()
    recorder = report.watch(sweeper.app, stack.sandbox_url, stack.web_url)
    # Every kind of fault at least once; the outages block the loop for a few seconds more.
    duration_s = len(FAULT_KINDS) * fault_every_s + 4
    started = time.monotonic()
    threads = [
        threading.Thread(target=shop, args=(shopper, plan, duration_s), daemon=True)
        for shopper, plan in zip(shoppers, plans, strict=True)
    ]
    for thread in threads:
        thread.start()
    schedule = iter(chaos.schedule(10**6))
    next_fault_at = started + 1
    chaos.calm()
    # Until the customers are done and every kind of fault has had its turn.
    while any(t.is_alive() for t in threads) or len(chaos.log) < len(FAULT_KINDS):
        now = time.monotonic()
        if now >= next_fault_at:
            chaos.calm()
            chaos.inject(next(schedule), now - started)
            recorder.mark(chaos.log[-1]["fault"])
            next_fault_at = now + fault_every_s
        stack.supervise()
        sweeper.tick()
        refunder.tick()
        disputer.tick()
        time.sleep(0.2)
    traffic_s = time.monotonic() - started
    chaos.clear()
    recorder.mark("faults cleared")
    for _ in range(3):  # the disputes opened last, decided with no fault in the way
        disputer.last = 0.0
        disputer.tick()
    settled_at = settle(stack, sweeper, settle_s, also=lambda: disputes_caught_up(stack, sweeper))
    recorder.mark("settled" if settled_at is not None else "settle time over")
    checked = invariants(stack, sweeper)
    # Then days pass at the provider, with payouts (and what it plants), each reconciled.
    books = books_days(stack, sweeper)
    recorder.mark("books reconciled")
    stop_viewing.set()
    viewing.join(timeout=30)
    recorder.stop()
    stop_bank.set()
    authenticating.join(timeout=10)
    results = {
        "seed": seed,
        "operations": sum(len(plan) for plan in plans),
        "customers": customers,
        "traffic_s": round(traffic_s, 1),
        "faults": chaos.log,
        "worker_restarts": sum(p.restarts for p in stack.programs),
        "sweeps_failed_during_outages": sweeper.failed,
        "client_responses": {str(k): v for k, v in sorted(traffic.statuses.items())},
        # What the web logged for each 500 it answered (none expected): the evidence.
        "unhandled_errors": unhandled_errors(stack),
        "client_gave_up": traffic.gave_up,
        "three_ds_authenticated": bank.completed,
        "refunds_requested": refunder.requested,
        "refunds_refused": refunder.refused,
        "disputes_decided": len(disputer.decided),
        "settle_s": round(settled_at, 1) if settled_at is not None else None,
        "timeline": report.timeline(recorder, pages),
        "books": books,
        **checked,
    }
    results["violations"] += books.pop("violations")
    sweeper.close()
    results["ok"] = not results["violations"]
    return results


def unhandled_errors(stack: Stack, most: int = 5) -> list[str]:
    """The web's log lines of errors it answered with a 500 (its traceback included)."""
    found = []
    for program in stack.programs:
        if program.name == "web" and program.log.exists():
            lines = program.log.read_text(errors="replace").splitlines()
            found += [line[:3000] for line in lines if "unhandled error on" in line]
    return found[:most]


def drill_invariants(stack: Stack) -> list[str]:
    """The invariant violations found in a stack right now."""
    sweeper = Sweeper(stack, grace_s=int(SETTINGS["PENDING_SWEEP_GRACE_S"]))
    try:
        return list(invariants(stack, sweeper)["violations"])
    finally:
        sweeper.close()
