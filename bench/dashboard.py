"""The dashboard at scale: the overview (with its charts), the unknown list, a payment's
page and the search, timed through the app over many payments.

    python -m bench.dashboard [--payments 1000000]

Fills a throwaway PostgreSQL (or BENCH_DATABASE_URL) with payments in every status, a
transition each (the last hour's chart reads them), provider ids and webhook events,
then times each page. Goals: search under 100 ms, overview under 200 ms. Last line:
one JSON object of the figures and goals.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

from sqlalchemy import text

STATUSES = "ARRAY['succeeded','succeeded','succeeded','failed','pending','unknown','needs_review']"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--payments", type=int, default=1_000_000)
    args = parser.parse_args()
    from bench.common import postgres_url, redis_url, write_results

    with postgres_url() as url, redis_url() as redis:
        os.environ["REDIS_URL"] = redis
        results = run(url, args.payments)
    for page, ms in results["median_ms"].items():
        print(
            f"{page:34} median {ms:7.1f} ms over {results['renders']} renders "
            f"({args.payments} payments)"
        )
    print(f"results in {write_results('dashboard', results)}")
    search = max(ms for page, ms in results["median_ms"].items() if "search" in page)
    print(
        json.dumps(
            {
                "payments": args.payments,
                "overview_ms": results["median_ms"]["/admin/"],
                "search_worst_ms": search,
                "goal_overview_ms": 200,
                "goal_search_ms": 100,
            }
        )
    )


def run(url: str, count: int) -> dict[str, Any]:
    from flask_migrate import upgrade
    from werkzeug.security import generate_password_hash

    from app import create_app
    from extensions import db
    from models import AdminUser

    app = create_app({"SQLALCHEMY_DATABASE_URI": url, "WTF_CSRF_ENABLED": False})
    with app.app_context():
        upgrade()
        _fill(db, count)
        db.session.add(
            AdminUser(
                email="bench-admin@example.com",
                password_hash=generate_password_hash("bench-password"),
            )
        )
        db.session.commit()
        db.session.execute(text("ANALYZE"))
        db.session.commit()
    client = app.test_client()
    client.post(
        "/admin/login", data={"email": "bench-admin@example.com", "password": "bench-password"}
    )
    with app.app_context():
        key = db.session.execute(text("SELECT idempotency_key FROM payments LIMIT 1")).scalar()
        mid = count // 2
    pages = [
        "/admin/",
        "/admin/unknown/",
        f"/admin/payment/{mid}",
        f"/admin/search/?q={key}",
        f"/admin/search/?q=pi_{mid}",
        f"/admin/search/?q=evt_{mid}",
        f"/admin/search/?q={mid}",
    ]
    timings: dict[str, list[float]] = {page: [] for page in pages}
    for _ in range(10):
        for page in timings:
            started = time.perf_counter()
            response = client.get(page)
            timings[page].append((time.perf_counter() - started) * 1000)
            assert response.status_code in (200, 302), (page, response.status_code)
    with app.app_context():
        db.engine.dispose()
    return {
        "payments": count,
        "renders": 10,
        "median_ms": {page: round(statistics.median(ms), 1) for page, ms in timings.items()},
    }


def _fill(db: Any, count: int) -> None:
    customer = db.session.execute(
        text(
            "INSERT INTO customers (email, password_hash, created_at) "
            "VALUES ('bench@example.com', 'x', now()) RETURNING id"
        )
    ).scalar_one()
    wallet = db.session.execute(
        text(
            "INSERT INTO wallets (customer_id, currency, balance_minor, updated_at) "
            "VALUES (:c, 'EUR', 0, now()) RETURNING id"
        ),
        {"c": customer},
    ).scalar_one()
    db.session.execute(
        text(f"""
        INSERT INTO payments (idempotency_key, customer_id, purpose, wallet_id, provider,
            amount_minor, currency, status, send_count, reconcile_attempts, created_at,
            updated_at, next_reconcile_at, first_sent_at)
        SELECT gen_random_uuid(), :c, 'wallet_topup', :w, 'stripe', 100, 'EUR', s.status, 0, 0,
               now() - (g || ' seconds')::interval, now() - (g || ' seconds')::interval,
               CASE WHEN s.status = 'unknown' THEN now() + interval '1 minute' END,
               now() - (g || ' seconds')::interval
        FROM generate_series(1, :n) g
        CROSS JOIN LATERAL (SELECT ({STATUSES})[1 + (g % 7)] AS status) s
    """),
        {"c": customer, "w": wallet, "n": count},
    )
    db.session.execute(text("UPDATE payments SET provider_payment_id = 'pi_' || id"))
    db.session.execute(
        text("""
        INSERT INTO payment_transitions (payment_id, from_status, to_status, source, reason,
            created_at)
        SELECT id, 'pending', status, 'charge', 'bench', updated_at FROM payments
        WHERE status <> 'pending'
    """)
    )
    db.session.execute(
        text("""
        INSERT INTO processed_webhooks (provider, event_id, event_type, payload, state, note,
            received_at, payment_id)
        SELECT 'stripe', 'evt_' || id, 'payment_intent.succeeded', '{}', 'applied', 'bench',
            updated_at, id FROM payments WHERE id % 5 = 0
    """)
    )


if __name__ == "__main__":
    main()
