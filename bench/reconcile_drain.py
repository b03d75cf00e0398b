"""Reconciliation drain: how long until N unknown payments are resolved after recovery.

    python -m bench.reconcile_drain [--payments 10000] [--workers 1,4]

The state after an outage: N payments the provider did charge (each created
through our own Stripe client with its idempotency key), but whose answers we
never got, so they are `unknown` and due. The whole system runs as in
production (bench/drills/stack.py: sandbox, gunicorn, RQ workers as separate
processes on PostgreSQL); the sweep runs every second, as the scheduler would,
and the workers look each payment up. Reported per worker count: seconds until
none is unknown, payments/s, and provider calls per payment (goal: about 1).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import requests

from bench.common import bulk_topups, write_results
from bench.drills.stack import Stack, Sweeper, running_stack
from sandbox.context import DEFAULT_SEARCH_LAG_S

SETTINGS = {"PENDING_SWEEP_GRACE_S": "3600"}  # nothing but the reconciliations moves


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--payments", type=int, default=10_000)
    parser.add_argument("--workers", default="1,4")
    parser.add_argument("--timeout-s", type=float, default=900)
    args = parser.parse_args()
    rows = []
    for workers in [int(w) for w in args.workers.split(",")]:
        row = drain(args.payments, workers, args.timeout_s)
        rows.append(row)
        print(
            f"workers={workers}  {row['payments']} unknown payments resolved in "
            f"{row['seconds']} s ({row['payments_per_s']}/s), "
            f"{row['calls_per_payment']} provider calls per payment, "
            f"statuses {row['final_statuses']}, double charges {row['double_charges']}",
            flush=True,
        )
    print(f"results in {write_results('reconcile_drain', {'rows': rows})}")


def drain(count: int, workers: int, timeout_s: float) -> dict[str, Any]:
    with running_stack(queue_workers=workers, settings=SETTINGS) as stack:
        sweeper = Sweeper(stack, grace_s=3600, every_s=1)
        try:
            ids = _charged_but_unknown(stack, sweeper, count)
            started_at = time.time()
            started = time.monotonic()
            left = len(ids)
            while left and time.monotonic() - started < timeout_s:
                sweeper.tick()
                left = _count(sweeper, "status = 'unknown'")
                time.sleep(0.2)
            seconds = time.monotonic() - started
            calls = requests.get(
                f"{stack.sandbox_url}/_sandbox/requests",
                params={"since": str(started_at), "dialect": "stripe"},
                timeout=60,
            ).json()["count"]
            charges = requests.get(f"{stack.sandbox_url}/_sandbox/charges", timeout=60).json()
            statuses = _statuses(sweeper)
        finally:
            sweeper.close()
    return {
        "payments": len(ids),
        "workers": workers,
        "seconds": round(seconds, 1),
        "left_unknown": left,
        "payments_per_s": round(len(ids) / seconds, 1),
        "calls_per_payment": round(calls / len(ids), 3),
        "final_statuses": statuses,
        "double_charges": len(charges["double_charged_payments"]),
    }


def _charged_but_unknown(stack: Stack, sweeper: Sweeper, count: int) -> list[int]:
    """N top-ups charged at the provider through our client, then marked unknown."""
    from sqlalchemy import select, text

    from extensions import db
    from models import Payment
    from services.payments.kind import request_for
    from services.platform.provider_clients import provider_for

    with sweeper.app.app_context():
        ids = bulk_topups(db, count, "pending", "drain")
    # No webhooks: every payment must be resolved by a lookup, which is what is measured.
    faults = f"{stack.sandbox_url}/_sandbox/faults"
    requests.post(faults, json={"kind": "webhook_drop"}, timeout=10).raise_for_status()

    def charge(batch: list[int]) -> None:
        with sweeper.app.app_context():
            client = provider_for("stripe")
            for payment in db.session.scalars(select(Payment).where(Payment.id.in_(batch))):
                client.charge(request_for(payment, payment.first_sent_at))
            db.session.remove()

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(charge, [ids[i : i + 200] for i in range(0, len(ids), 200)]))
    # An outage's unknown payments were charged long before it ended: past the provider's
    # search lag, so a lookup finds each one (a fresher one would wait for its next lookup).
    time.sleep(DEFAULT_SEARCH_LAG_S + 1)
    with sweeper.app.app_context():
        db.session.execute(
            text(
                "UPDATE payments SET status = 'unknown', next_reconcile_at = now(), "
                "reconcile_attempts = 0 WHERE id = ANY(:ids)"
            ),
            {"ids": ids},
        )
        db.session.commit()
    return ids


def _count(sweeper: Sweeper, where: str) -> int:
    from sqlalchemy import text

    from extensions import db

    with sweeper.app.app_context():
        found = db.session.scalar(text(f"SELECT COUNT(*) FROM payments WHERE {where}"))
        db.session.remove()
    return int(found or 0)


def _statuses(sweeper: Sweeper) -> dict[str, int]:
    from sqlalchemy import text

    from extensions import db

    with sweeper.app.app_context():
        rows = db.session.execute(
            text("SELECT status, COUNT(*) FROM payments GROUP BY status")
        ).all()
        db.session.remove()
    return {status: n for status, n in rows}


if __name__ == "__main__":
    main()
