"""Reconciling a day costs what the day holds, not what the history holds: a day of
10,000 and a day of 100,000 Stripe balance transactions (charges of top-ups, each with
our payment and its journal entry) reconciled through the sandbox over HTTP, time and
memory printed; days of 10,000 before and after the large one (the medians of three of
each compared), and a small day reconciled again (nothing new to post).

    python -m bench.books_reconcile [--small 10000] [--large 100000]

Each is its own day (the sandbox's days pass: POST /_sandbox/stripe/balance/age),
reconciled the next day as the scheduler does, after a warm-up day of 200 (connections,
statement caches). The reconciliation includes the day's balance against Stripe's.
Printed per day: seconds, microseconds per transaction, the process's peak RSS and how
much this day raised it (the peak only grows: the smallest day runs first). Goals: the
per-transaction cost of the largest day within 1.5x of the smallest's (linear in the
day), and the smallest day again, after the history, within 1.5x of its first run. The
last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import statistics
import time
from datetime import timedelta
from typing import Any

import requests

from bench.common import postgres_url, redis_url, sandbox_url, write_results
from bench.drills.stack import migrate

GOAL = 1.5
DAY_S = 86400


def _plant(sandbox: str, db: Any, count: int) -> None:
    """`count` charges at the sandbox (now) and, for each, our succeeded top-up with its
    journal entry (created now). Its credit leg is `revenue`, not the wallet's (a wallet's
    posting must name a ledger entry, migration 0030): the reconciliation reads only the
    clearing leg."""
    from sqlalchemy import text

    planted = requests.post(
        f"{sandbox}/_sandbox/stripe/charges", json={"count": count, "amount": 1000}, timeout=600
    )
    planted.raise_for_status()
    intents = planted.json()["data"]
    db.session.execute(
        text("""
        WITH c AS (
            INSERT INTO customers (email, password_hash, created_at)
            SELECT i || '@example.com', 'x', now() FROM unnest(CAST(:ids AS text[])) i
            RETURNING id, email
        ), w AS (
            INSERT INTO wallets (customer_id, currency, balance_minor, updated_at)
            SELECT id, 'EUR', 1000, now() FROM c RETURNING id, customer_id
        ), p AS (
            INSERT INTO payments (idempotency_key, customer_id, purpose, wallet_id, provider,
                provider_payment_id, amount_minor, currency, status, payment_method,
                send_count, reconcile_attempts, created_at, updated_at, first_sent_at,
                last_sent_at)
            SELECT gen_random_uuid(), w.customer_id, 'wallet_topup', w.id, 'stripe',
                split_part(c.email, '@', 1), 1000, 'EUR', 'succeeded',
                'pm_card_visa', 1, 0, now(), now(), now(), now()
            FROM w JOIN c ON c.id = w.customer_id RETURNING id, wallet_id
        ), e AS (
            INSERT INTO journal_entries (source_kind, source_id, step, created_at)
            SELECT 'payment', id, 'succeeded', now() FROM p RETURNING id, source_id
        )
        INSERT INTO postings (entry_id, account, amount_minor, currency)
        SELECT e.id, 'clearing:stripe', 1000, 'EUR' FROM e
        UNION ALL
        SELECT e.id, 'revenue', -1000, 'EUR' FROM e
        """),
        {"ids": intents},
    )
    db.session.commit()


def _days_pass(sandbox: str, db: Any, days: int) -> None:
    """Everything made so far moves `days` back, at the sandbox, in our journal and in
    what we read of the provider (append-only: their triggers are set aside for this,
    as a restore would)."""
    from sqlalchemy import text

    requests.post(
        f"{sandbox}/_sandbox/stripe/balance/age", json={"seconds": days * DAY_S}, timeout=600
    ).raise_for_status()
    for table in ("journal_entries", "provider_balance_transactions"):
        db.session.execute(text(f"ALTER TABLE {table} DISABLE TRIGGER USER"))
        db.session.execute(
            text(f"UPDATE {table} SET created_at = created_at - make_interval(days => :d)"),
            {"d": days},
        )
        db.session.execute(text(f"ALTER TABLE {table} ENABLE TRIGGER USER"))
    db.session.commit()


def _reconcile(day: Any) -> dict[str, Any]:
    from extensions import db
    from services.statements import reconcile

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    result = reconcile.reconcile("stripe", day)
    seconds = time.perf_counter() - started
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert result.status.value == "reconciled", [
        i.detail for i in result.items if i.outcome.value not in ("matched", "booked")
    ][:5]
    db.session.rollback()
    items = len(result.items)
    return {
        "transactions": items,
        "seconds": round(seconds, 2),
        "us_per_transaction": round(seconds * 1e6 / items, 1),
        "rss_peak_mb": round(rss_after / 1024, 1),
        "rss_peak_growth_mb": round((rss_after - rss_before) / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=100_000)
    args = parser.parse_args()
    small_size, large_size = args.small, args.large
    from sqlalchemy import text

    from app import create_app
    from extensions import db
    from models.types import utcnow

    logging.disable(logging.INFO)  # a line per page read otherwise
    with postgres_url() as db_url, redis_url() as r_url, sandbox_url() as sandbox:
        migrate({**os.environ, "DATABASE_URL": db_url, "REDIS_URL": r_url, "SECRET_KEY": "bench"})
        app = create_app(
            {"SQLALCHEMY_DATABASE_URI": db_url, "REDIS_URL": r_url, "STRIPE_API_BASE": sandbox}
        )
        with app.app_context():
            # Oldest first: a warm-up day, three small days, the large one, three small
            # days more (medians: autovacuum and the machine's other work come and go).
            # Each day is reconciled the next day, as the scheduler does (its balance
            # against the provider's then reads only what came since: nothing).
            plan = [("warm-up", 200)]
            plan += [(f"small {n} before", small_size) for n in (1, 2, 3)]
            plan += [("large", large_size)]
            plan += [(f"small {n} after", small_size) for n in (1, 2, 3)]
            runs = {}
            for name, size in plan:
                started = time.perf_counter()
                _plant(sandbox, db, size)
                _days_pass(sandbox, db, 1)
                # The statistics autovacuum keeps in production (a bulk load outruns it).
                db.session.execute(text("ANALYZE"))
                db.session.commit()
                took = time.perf_counter() - started
                print(f"planted the day {name} ({size:,}) in {took:.0f} s", flush=True)
                runs[name] = _reconcile(utcnow().date() - timedelta(days=1))
                print(f"{name}: {runs[name]}", flush=True)
            again = utcnow().date() - timedelta(days=len(plan) - 1)  # small 1 before
            runs["small 1, reconciled again"] = _reconcile(again)
            print(f"small 1, reconciled again: {runs['small 1, reconciled again']}", flush=True)
            db.engine.dispose()

    def median_us(when: str) -> float:
        return statistics.median(runs[f"small {n} {when}"]["us_per_transaction"] for n in (1, 2, 3))

    before, after = median_us("before"), median_us("after")
    linear = runs["large"]["us_per_transaction"] / before
    history = after / before
    results = {
        "days": runs,
        "small_us_per_transaction_before_after": [before, after],
        "per_transaction_ratio": round(linear, 2),
        "history_ratio": round(history, 2),
        "goal": GOAL,
        "met": linear <= GOAL and history <= GOAL,
    }
    print(
        f"per transaction (medians of three small days): the day of {large_size:,} vs "
        f"{small_size:,}: {linear:.2f}x; days of {small_size:,} after "
        f"{3 * small_size + large_size:,} of history vs before: {history:.2f}x "
        f"(goal <= {GOAL}x each)"
    )
    write_results("books_reconcile", results)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
