"""Checkout intake: payments accepted per second through gunicorn, next to the limit.

    python -m bench.intake [--seconds 5] [--workers 1,2,4] [--clients 8]

The limit is a minimal Flask endpoint doing one INSERT and one RQ enqueue
(bench/drills/minimal_app.py) under the same gunicorn settings, in the same run. Each
endpoint serves for a second first, not counted (bench.common.side_by_side: a fresh
server's first requests open its connections and prepare its statements).
Goal: the real `POST /api/orders/<id>/payments` (the lean intake, services/payments/intake.py)
reaches >= 60 % of it at 2 and 4 workers. A third endpoint, this app checking the
bearer token through the ORM and enqueueing without writing anything
(bench/drills/auth_only_app.py), is reported beside it: the ceiling of an intake that
authenticates each request the ordinary way. The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import uuid
from collections.abc import Callable
from typing import Any

import requests

from bench.common import (
    Feed,
    benchmark_system,
    minimal_send,
    served,
    side_by_side,
    write_results,
)

GOAL = 0.6  # of the minimal INSERT + enqueue endpoint, at 2 and 4 gunicorn workers
# The orders belong to this many customers, each with its own token, as in a shop (one
# customer paying hundreds of orders a second is no shop's load). It made no measurable
# difference here: 522/497/406 per s at 1/2/4 workers against 514/479/410 with one.
CUSTOMERS = 200


class Payer:
    """Pays the next open order per call (as its customer), each with a fresh key."""

    def __init__(self, url: str, orders: list[tuple[str, int]]) -> None:
        self.url, self.orders = url, Feed(orders)

    def __call__(self, session: requests.Session) -> bool:
        taken = self.orders.take()
        if taken is None:
            return False
        token, order_id = taken
        response = session.post(
            f"{self.url}/api/orders/{order_id}/payments",
            headers={"Authorization": f"Bearer {token}", "Idempotency-Key": str(uuid.uuid4())},
            json={"payment_method": "pm_card_visa"},
        )
        return response.status_code == 201


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    rows = []
    with benchmark_system() as (env, app):
        from extensions import db

        for workers in [int(w) for w in args.workers.split(",")]:
            with app.app_context():
                # More open orders than the clients can pay: they must never run out.
                orders = _customers_with_orders(db, int(1500 * args.seconds) + 200)
            auth = {"Authorization": f"Bearer {orders[0][0]}"}
            with (
                served("bench.drills.minimal_app:app", workers, env) as minimal_url,
                served("wsgi:app", workers, env) as url,
                served("bench.drills.auth_only_app:app", workers, env) as auth_url,
            ):
                rates = side_by_side(
                    {
                        "minimal": minimal_send(minimal_url),
                        "pay": Payer(url, orders),
                        "auth_only": _poster(f"{auth_url}/bench/auth-and-enqueue", auth),
                    },
                    args.clients,
                    args.seconds,
                )
            accepted, limit, ceiling = rates["pay"], rates["minimal"], rates["auth_only"]
            rows.append(
                {
                    "gunicorn_workers": workers,
                    "payments_per_s": round(accepted, 1),
                    "minimal_limit_per_s": round(limit, 1),
                    "ratio": round(accepted / limit, 3) if limit else None,
                    "auth_and_enqueue_only_per_s": round(ceiling, 1),
                    "auth_and_enqueue_only_ratio": round(ceiling / limit, 3) if limit else None,
                }
            )
            print(
                f"workers={workers}  payments {accepted:7.1f}/s  minimal INSERT+enqueue "
                f"{limit:7.1f}/s  ratio {accepted / limit:5.2f}  (token check + enqueue, "
                f"no writes: {ceiling:7.1f}/s, ratio {ceiling / limit:4.2f})",
                flush=True,
            )
    summary: dict[str, Any] = {"goal_ratio": GOAL}
    for row in rows:
        summary[f"intake_ratio_{row['gunicorn_workers']}w"] = row["ratio"]
        summary[f"auth_only_ratio_{row['gunicorn_workers']}w"] = row["auth_and_enqueue_only_ratio"]
    goal_rows = [r["ratio"] for r in rows if r["gunicorn_workers"] in (2, 4)]
    summary["goal_met"] = bool(goal_rows) and all(r is not None and r >= GOAL for r in goal_rows)
    path = write_results("intake", {"clients": args.clients, "rows": rows, "summary": summary})
    print(
        f"goal: >= {GOAL} of the minimal endpoint at 2 and 4 workers: "
        f"{'met' if summary['goal_met'] else 'NOT met'}; results in {path}"
    )
    print(json.dumps(summary))


def _poster(url: str, headers: dict[str, str]) -> Callable[[requests.Session], bool]:
    return lambda session: session.post(url, headers=headers).status_code == 201


def _customers_with_orders(
    db: Any, count: int, customers: int = CUSTOMERS
) -> list[tuple[str, int]]:
    """`customers` customers with API tokens and `count` open one-line orders among them,
    interleaved: [(token, order id)] (bulk SQL)."""
    from sqlalchemy import text

    from services.accounts.customers import hash_token

    tag = uuid.uuid4().hex[:8]
    tokens = [f"tok_bench_{tag}_{n}" for n in range(customers)]
    ids = db.session.scalars(
        text(
            "INSERT INTO customers (email, password_hash, api_token_hash, created_at) "
            "SELECT 'bench-' || :tag || '-' || n || '@example.com', 'x', h, now() "
            "FROM unnest(CAST(:hashes AS text[])) WITH ORDINALITY AS t(h, n) ORDER BY n "
            "RETURNING id"
        ),
        {"tag": tag, "hashes": [hash_token(t) for t in tokens]},
    ).all()
    orders = db.session.execute(
        text(
            "INSERT INTO orders (customer_id, status, total_minor, currency, created_at, "
            "updated_at) SELECT (CAST(:ids AS bigint[]))[1 + g % :k], 'open', 300, 'EUR', "
            "now(), now() FROM generate_series(1, :n) g RETURNING id, customer_id"
        ),
        {"ids": list(ids), "k": len(ids), "n": count},
    ).all()
    db.session.commit()
    token_of = dict(zip(ids, tokens, strict=True))
    return [(token_of[customer_id], order_id) for order_id, customer_id in orders]


if __name__ == "__main__":
    main()
