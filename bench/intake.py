"""Checkout intake: payments accepted per second through gunicorn, next to the limit.

    python -m bench.intake [--seconds 5] [--workers 1,2,4] [--clients 8]

The limit is a minimal Flask endpoint doing one INSERT and one RQ enqueue
(bench/drills/minimal_app.py) under the same gunicorn settings, in the same run.
Goal: the real `POST /api/orders/<id>/payments` reaches >= 70 % of it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import uuid
from typing import Any

import requests

from bench.common import gunicorn, load, minimal_limit
from bench.drills.stack import PROJECT_DIR


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    from bench.common import postgres_url, redis_url, write_results

    with postgres_url() as db_url, redis_url() as r_url:
        env = {**os.environ, "DATABASE_URL": db_url, "REDIS_URL": r_url, "SECRET_KEY": "bench"}
        subprocess.run(
            [sys.executable, "-m", "flask", "--app", "app", "db", "upgrade"],
            cwd=PROJECT_DIR,
            env=env,
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [sys.executable, "-m", "flask", "--app", "app", "seed"],
            cwd=PROJECT_DIR,
            env=env,
            check=True,
            capture_output=True,
        )
        token = (
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "flask",
                    "--app",
                    "app",
                    "customers",
                    "create",
                    f"bench-{uuid.uuid4().hex[:6]}@example.com",
                ],
                cwd=PROJECT_DIR,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            .stdout.split("api token: ")[1]
            .strip()
        )
        auth = {"Authorization": f"Bearer {token}"}
        rows = []
        for workers in [int(w) for w in args.workers.split(",")]:
            limit = minimal_limit(workers, env, args.clients, args.seconds)
            real, real_url = gunicorn("wsgi:app", workers, env)
            try:
                orders = _orders(real_url, auth, int(limit * args.seconds * 1.5) + 50)
                pending = iter(orders)
                lock = threading.Lock()

                def pay(
                    session: requests.Session,
                    url: str = real_url,
                    pending: Any = pending,
                    lock: threading.Lock = lock,
                ) -> bool:
                    with lock:
                        order_id = next(pending, None)
                    if order_id is None:
                        return False
                    response = session.post(
                        f"{url}/api/orders/{order_id}/payments",
                        headers={**auth, "Idempotency-Key": str(uuid.uuid4())},
                    )
                    return response.status_code == 201

                accepted = load(pay, args.clients, args.seconds)
            finally:
                real.terminate()
                real.wait()
            rows.append(
                {
                    "gunicorn_workers": workers,
                    "payments_per_s": round(accepted, 1),
                    "minimal_limit_per_s": round(limit, 1),
                    "ratio": round(accepted / limit, 3) if limit else None,
                }
            )
            print(
                f"workers={workers}  payments {accepted:7.1f}/s  minimal INSERT+enqueue "
                f"{limit:7.1f}/s  ratio {accepted / limit:5.2f}",
                flush=True,
            )
    print(f"results in {write_results('intake', {'clients': args.clients, 'rows': rows})}")


def _orders(base: str, auth: dict[str, str], count: int) -> list[int]:
    session = requests.Session()
    ids = []
    for _ in range(count):
        response = session.post(
            f"{base}/api/orders", headers=auth, json={"items": [{"sku": "STICK-01", "quantity": 1}]}
        )
        ids.append(response.json()["id"])
    return ids


if __name__ == "__main__":
    main()
