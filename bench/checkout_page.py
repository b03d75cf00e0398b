"""The checkout page's own answer, before and after card entry (Stripe.js), side by side.

    python -m bench.checkout_page [--baseline 2e95f5d] [--rounds 8] [--requests 150]

Goal: the page that mounts the card element answers within 10 % of the page before it
(the card element itself loads from the provider, in the browser, not from us).

The baseline is the same project at an earlier commit (default: the last one before card
entry), exported with `git archive` into a temporary directory. Each version runs in a
process of its own on its own PostgreSQL database with one customer and one open order; the
driver asks them in alternating rounds, so both see the same machine noise, and compares
the medians of the server-side render time (Flask's test client, no network).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, make_url, text

from bench.common import postgres_url, redis_url, write_results
from bench.drills.stack import PROJECT_DIR

BASELINE = "2e95f5d"  # the last commit before card entry and 3-D Secure

# Runs inside each version's tree: serve "N" lines with N timed checkout renders.
WORKER = """
import json, sys, time
from app import create_app
from extensions import db
from flask_migrate import upgrade
from models import Product
from services.accounts.customers import create_customer
from services.payments.ordering import create_order

app = create_app({"SQLALCHEMY_DATABASE_URI": sys.argv[2],
                  "REDIS_URL": sys.argv[1], "WTF_CSRF_ENABLED": False})
with app.app_context():
    upgrade()
    db.session.add(Product(sku="MUG", name="Mug", price_minor=1400, currency="EUR"))
    db.session.commit()
    customer = create_customer("bench@example.com", "password123", ["EUR"])
    order_id = create_order(customer, {"MUG": 2}).id
client = app.test_client()
client.post("/login", data={"email": "bench@example.com", "password": "password123"})
path = f"/orders/{order_id}/checkout"
assert client.get(path).status_code == 200, "the checkout page did not render"
print("ready", flush=True)
for line in sys.stdin:
    times = []
    for _ in range(int(line)):
        started = time.perf_counter()
        client.get(path)
        times.append((time.perf_counter() - started) * 1000)
    print(json.dumps(times), flush=True)
"""


class Version:
    def __init__(self, tree: Path, redis: str, database_url: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, redis, database_url],
            cwd=tree,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        )
        assert self.process.stdout is not None and self.process.stdin is not None
        if self.process.stdout.readline().strip() != "ready":
            raise SystemExit(f"the version in {tree} did not start")
        self.times: list[float] = []

    def run(self, count: int) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{count}\n")
        self.process.stdin.flush()
        self.times += json.loads(self.process.stdout.readline())

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--requests", type=int, default=150)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="baseline-") as tmp,
        redis_url() as redis,
        postgres_url() as database,
    ):
        archive = subprocess.run(
            ["git", "-C", str(PROJECT_DIR), "archive", args.baseline],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        versions = {
            name: Version(tree, redis, _new_database(database, f"checkout_{name}"))
            for name, tree in (("before", Path(tmp)), ("now", PROJECT_DIR))
        }
        try:
            for _ in range(args.rounds):
                for version in versions.values():
                    version.run(args.requests)
        finally:
            for version in versions.values():
                version.close()
    results = _summary(versions, args.baseline)
    for name, row in results["versions"].items():
        print(f"{name:7} median {row['median_ms']:6.2f} ms  p90 {row['p90_ms']:6.2f} ms")
    print(f"now / before (medians): {results['ratio']:.3f} (goal <= {results['goal']})")
    print(f"results in {write_results('checkout_page', results)}")
    print(json.dumps({k: results[k] for k in ("ratio", "goal", "baseline")}))


def _new_database(url: str, name: str) -> str:
    """A database of its own on the cluster at `url` for one version; its URL."""
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
        conn.execute(text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return make_url(url).set(database=name).render_as_string(hide_password=False)


def _summary(versions: dict[str, Version], baseline: str) -> dict[str, Any]:
    rows = {
        name: {
            "median_ms": round(statistics.median(v.times), 3),
            "p90_ms": round(statistics.quantiles(v.times, n=10)[-1], 3),
            "renders": len(v.times),
        }
        for name, v in versions.items()
    }
    ratio = rows["now"]["median_ms"] / rows["before"]["median_ms"]
    return {"versions": rows, "ratio": round(ratio, 3), "goal": 1.10, "baseline": baseline}


if __name__ == "__main__":
    main()
