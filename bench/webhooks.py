"""Webhook ingestion: signed events per second with 50 % duplicates, next to the limit.

    python -m bench.webhooks [--seconds 5] [--workers 1,2,4] [--senders 8]

Each payment gets one `payment_intent.succeeded` event; every event is sent twice
(close together, so the copies often race each other, as a provider's redelivery does) by
`--senders` threads to `POST /webhooks/stripe` under gunicorn. The limit is the
minimal INSERT + enqueue endpoint of bench/intake.py under the same settings, in the
same run, both after a second's warm-up (bench.common.side_by_side). Goal: >= 70 % of
it, and zero double effects: every event recorded once, every top-up credited once,
every wallet balance equal to its ledger. Then two
`flask worker maintenance` processes apply what was recorded (in batches,
services/webhooks/batches.py). Goal: they apply >= 0.8 of what one web worker ingests
(`apply_vs_ingest`, in the last line, a JSON object; deliveries, duplicates included,
as the goal was first measured). Beside it, `apply_vs_distinct_events_ingested`: against
the distinct events only, the ones that need applying.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import threading
import time
import uuid
from typing import Any

import requests

from bench.common import (
    Feed,
    benchmark_system,
    bulk_topups,
    minimal_send,
    served,
    side_by_side,
    write_results,
)
from bench.drills.stack import PROJECT_DIR
from sandbox.events import stripe_signature

SECRET = "bench-webhook-secret"
APPLY_GOAL = 0.8  # 2 maintenance workers apply >= 0.8 of what one web worker ingests


def _event(payment_id: int) -> bytes:
    return json.dumps(
        {
            "id": f"evt_{uuid.uuid4().hex}",
            "object": "event",
            "type": "payment_intent.succeeded",
            "created": int(time.time()),
            "data": {
                "object": {
                    "id": f"pi_bench_{payment_id}",
                    "object": "payment_intent",
                    "status": "succeeded",
                    "amount": 1000,
                    "currency": "eur",
                    "metadata": {"payment_id": str(payment_id)},
                }
            },
        }
    ).encode()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--senders", type=int, default=8)
    args = parser.parse_args()
    rows = []
    with benchmark_system(STRIPE_WEBHOOK_SECRET=SECRET) as (env, app):
        from extensions import db

        for workers in [int(w) for w in args.workers.split(",")]:
            with app.app_context():
                # More events than the senders can use: they must never run out.
                ids = bulk_topups(db, int(1500 * args.seconds) + 200, "pending", f"w{workers}")
            with (
                served("bench.drills.minimal_app:app", workers, env) as minimal_url,
                served("wsgi:app", workers, env) as url,
            ):
                deliver = Deliverer(url, ids, args.senders)
                rates = side_by_side(
                    {"minimal": minimal_send(minimal_url), "webhooks": deliver},
                    args.senders,
                    args.seconds,
                )
            limit = rates["minimal"]
            row = {"events_per_s": round(rates["webhooks"], 1), **deliver.counts()}
            row["applied_by_two_workers_per_s"] = _apply_with_workers(env, app, ids, 2)
            with app.app_context():
                row |= _effects(db, ids)
            # Accepted (200) but not recorded would be an event lost.
            row["events_lost"] = row["distinct_events_accepted"] - row["events_recorded"]
            row |= {
                "gunicorn_workers": workers,
                "minimal_limit_per_s": round(limit, 1),
                "ratio": round(row["events_per_s"] / limit, 3) if limit else None,
            }
            rows.append(row)
            print(
                f"workers={workers}  events {row['events_per_s']:7.1f}/s "
                f"({row['duplicates_sent']} duplicates)  minimal INSERT+enqueue {limit:7.1f}/s  "
                f"ratio {row['ratio']:5.2f}  double effects {row['double_effects']}  "
                f"5xx {row['server_errors']}  lost {row['events_lost']}  "
                f"(then applied at {row['applied_by_two_workers_per_s']}/s by 2 maintenance "
                f"workers)",
                flush=True,
            )
    one = next((r for r in rows if r["gunicorn_workers"] == 1), None)
    ingest = one["events_per_s"] if one else None
    applied = one["applied_by_two_workers_per_s"] if one else None
    # Only distinct events need applying (half the deliveries are duplicates): whether
    # application keeps pace with what is recorded. The goal keeps its first measure.
    distinct = (
        one["events_per_s"] * one["distinct_events_accepted"] / one["deliveries_accepted"]
        if one and one["deliveries_accepted"]
        else None
    )
    summary = {
        "ingest_one_web_worker_per_s": ingest,
        "applied_two_maintenance_workers_per_s": applied,
        "apply_vs_ingest": round(applied / ingest, 3) if ingest and applied else None,
        "apply_vs_distinct_events_ingested": (
            round(applied / distinct, 3) if distinct and applied else None
        ),
        "goal_apply_vs_ingest": APPLY_GOAL,
        "ingest_ratios": {f"{r['gunicorn_workers']}w": r["ratio"] for r in rows},
        "double_effects": sum(r["double_effects"] for r in rows),
        "events_lost": sum(r["events_lost"] for r in rows),
    }
    summary["goal_met"] = bool(
        summary["apply_vs_ingest"] is not None and summary["apply_vs_ingest"] >= APPLY_GOAL
    )
    results = {"senders": args.senders, "duplicate_share": 0.5, "rows": rows, "summary": summary}
    print(
        f"2 maintenance workers apply {applied}/s against {ingest}/s ingested by one web "
        f"worker: {summary['apply_vs_ingest']} (goal >= {APPLY_GOAL}: "
        f"{'met' if summary['goal_met'] else 'NOT met'}); against the distinct events "
        f"among them: {summary['apply_vs_distinct_events_ingested']}; results in "
        f"{write_results('webhooks', results)}"
    )
    print(json.dumps(summary))


class Deliverer:
    """Sends the next event per call (each event twice, close together); counts answers."""

    def __init__(self, url: str, ids: list[int], senders: int) -> None:
        self.url = url
        bodies = [_event(payment_id) for payment_id in ids]
        rng = random.Random(1)
        deliveries: list[bytes] = []
        for start in range(0, len(bodies), senders):
            # A window as wide as the senders, each event in it twice in random order:
            # half of what is sent is a duplicate, and copies often race each other.
            window = bodies[start : start + senders] * 2
            rng.shuffle(window)
            deliveries.extend(window)
        self.deliveries = Feed(deliveries)
        self.lock = threading.Lock()  # guards the counts
        self.accepted: list[bytes] = []
        self.server_errors = 0

    def __call__(self, session: requests.Session) -> bool:
        body = self.deliveries.take()
        if body is None:
            return False
        response = session.post(
            f"{self.url}/webhooks/stripe",
            data=body,
            headers={
                "Content-Type": "application/json",
                "Stripe-Signature": stripe_signature(SECRET, body, int(time.time())),
            },
        )
        with self.lock:
            if response.status_code >= 500:
                self.server_errors += 1
            elif response.status_code == 200:
                self.accepted.append(body)
        return response.status_code == 200

    def counts(self) -> dict[str, Any]:
        distinct = {json.loads(body)["id"] for body in self.accepted}
        return {
            "deliveries_accepted": len(self.accepted),
            "distinct_events_accepted": len(distinct),
            "duplicates_sent": len(self.accepted) - len(distinct),
            "server_errors": self.server_errors,
        }


def _apply_with_workers(env: dict[str, str], app: Any, ids: list[int], count: int) -> float:
    """Run the queued applications with `count` `flask worker maintenance` processes until
    every event is processed (not --burst: a worker that found the queue empty at its
    start would leave, while the jobs a backlog rings for arrive later); events applied
    per second, from the first application to the last."""
    from sqlalchemy import text

    from extensions import db

    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "flask", "--app", "app", "worker", "maintenance"],
            cwd=PROJECT_DIR,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(count)
    ]
    try:
        deadline = time.monotonic() + 600
        with app.app_context():
            while time.monotonic() < deadline:
                # An event names its payment once applied: wait for every event pending.
                waiting = db.session.scalar(
                    text("SELECT count(*) FROM processed_webhooks WHERE state = 'pending'")
                )
                db.session.rollback()
                if not waiting:
                    break
                time.sleep(0.2)
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=60)
    with app.app_context():
        applied, first, last = db.session.execute(
            text(
                "SELECT count(*), min(processed_at), max(processed_at) FROM processed_webhooks "
                "WHERE payment_id = ANY(:ids) AND processed_at IS NOT NULL"
            ),
            {"ids": ids},
        ).one()
        db.session.rollback()
    seconds = (last - first).total_seconds() if applied > 1 else 0
    return round(applied / seconds, 1) if seconds else 0.0


def _effects(db: Any, ids: list[int]) -> dict[str, Any]:
    """Double effects: events recorded or applied more than once, top-ups credited twice."""
    from sqlalchemy import text

    from services.wallet.audit import audit_wallets

    recorded = db.session.execute(
        text(
            "SELECT COUNT(*), COUNT(DISTINCT event_id) FROM processed_webhooks "
            "WHERE provider = 'stripe' AND payment_id = ANY(:ids)"
        ),
        {"ids": ids},
    ).one()
    credits = db.session.execute(
        text(
            "SELECT COUNT(*), COUNT(DISTINCT operation_id) FROM ledger_entries "
            "WHERE kind = 'topup' AND wallet_id IN (SELECT wallet_id FROM payments "
            "WHERE id = ANY(:ids))"
        ),
        {"ids": ids},
    ).one()
    succeeded_twice = db.session.scalar(
        text(
            "SELECT COUNT(*) FROM (SELECT payment_id FROM payment_transitions "
            "WHERE to_status = 'succeeded' AND from_status <> 'succeeded' "
            "AND payment_id = ANY(:ids) GROUP BY payment_id HAVING COUNT(*) > 1) t"
        ),
        {"ids": ids},
    )
    succeeded = db.session.scalar(
        text("SELECT COUNT(*) FROM payments WHERE status = 'succeeded' AND id = ANY(:ids)"),
        {"ids": ids},
    )
    audit = audit_wallets()
    db.session.rollback()
    return {
        "events_recorded": recorded[1],
        "payments_succeeded": succeeded,
        "topup_credits": credits[0],
        "wallet_audit_mismatches": len(audit.mismatches),
        "double_effects": (recorded[0] - recorded[1])
        + (credits[0] - credits[1])
        + (succeeded_twice or 0)
        + abs(credits[0] - succeeded)
        + len(audit.mismatches),
    }


if __name__ == "__main__":
    main()
