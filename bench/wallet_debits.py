"""Debits per second on one hot wallet: the service next to the same debit in raw SQL.

    python -m bench.wallet_debits [--seconds 3] [--clients 1,2,4,8]

Each client is a separate process with its own connection (like gunicorn
workers). Both variants run in the same invocation, so the ratio is fair on a
noisy machine. Afterwards the invariants are checked: balance == sum(ledger),
never negative, one ledger entry per successful debit.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import psycopg

from services.books.journal import POST_SQL

START_BALANCE = 10**12  # never runs out during a run


def _app(url: str) -> Any:
    os.environ["REDIS_URL"] = "redis://127.0.0.1:1/0"  # the debit path never touches Redis
    from app import create_app

    return create_app(
        {
            "SQLALCHEMY_DATABASE_URI": url,
            "MAX_AMOUNT_MINOR": START_BALANCE,
            "SQLALCHEMY_ENGINE_OPTIONS": {"pool_size": 2},
        }
    )


def service_client(url: str, wallet_id: int, seconds: float, ready: Any, out: Any) -> None:
    from extensions import db
    from models import Wallet
    from services.wallet import ledger

    app = _app(url)
    done = 0
    with app.app_context():
        target = db.session.get(Wallet, wallet_id)
        if target is None:
            raise SystemExit(f"no wallet {wallet_id}")
        db.session.commit()
        ready.wait()  # everyone imported and connected: start together
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ledger.debit(target, 1, str(uuid.uuid4()), memo="bench")
            done += 1
    out.put(done)


def raw_client(url: str, wallet_id: int, seconds: float, ready: Any, out: Any) -> None:
    done = 0
    with psycopg.connect(url.replace("+psycopg", "")) as conn:
        conn.execute("SELECT 1")
        conn.commit()
        ready.wait()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with conn.transaction():
                row = conn.execute(
                    "SELECT balance_minor FROM wallets WHERE id = %s FOR UPDATE", (wallet_id,)
                ).fetchone()
                balance = row[0] if row else 0
                if balance < 1:
                    raise RuntimeError("insufficient funds in the benchmark wallet")
                entry = conn.execute(
                    "INSERT INTO ledger_entries (wallet_id, operation_id, amount_minor, kind, "
                    "memo, balance_after_minor, created_at) "
                    "VALUES (%s, %s, -1, 'debit', 'raw', %s, now()) RETURNING id",
                    (wallet_id, str(uuid.uuid4()), balance - 1),
                ).fetchone()
                assert entry is not None
                # Its entry in the books, as the product writes it (one statement).
                conn.execute(
                    POST_SQL,
                    ("ledger", entry[0], "debit", datetime.now(UTC),
                     [f"wallet:{wallet_id}", "revenue"], [1, -1], ["EUR", "EUR"],
                     [entry[0], None]),
                )  # fmt: skip
                conn.execute(
                    "UPDATE wallets SET balance_minor = %s, updated_at = now() WHERE id = %s",
                    (balance - 1, wallet_id),
                )
            done += 1
    out.put(done)


def run(kind: str, url: str, wallet_id: int, clients: int, seconds: float) -> float:
    ctx = mp.get_context("spawn")
    out, ready = ctx.Queue(), ctx.Barrier(clients)
    target = service_client if kind == "service" else raw_client
    procs = [
        ctx.Process(target=target, args=(url, wallet_id, seconds, ready, out))
        for _ in range(clients)
    ]
    for proc in procs:
        proc.start()
    total = sum(out.get(timeout=seconds + 300) for _ in procs)
    for proc in procs:
        proc.join()
    return total / seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--clients", default="1,2,4,8")
    args = parser.parse_args()
    from bench.common import postgres_url, write_results

    with postgres_url() as url:
        wallet_id = _prepare(url)
        rows = []
        for clients in [int(c) for c in args.clients.split(",")]:
            raw = run("raw", url, wallet_id, clients, args.seconds)
            service = run("service", url, wallet_id, clients, args.seconds)
            rows.append(
                {
                    "clients": clients,
                    "service_per_s": round(service, 1),
                    "raw_sql_per_s": round(raw, 1),
                    "ratio": round(service / raw, 3),
                }
            )
            print(
                f"clients={clients:2d}  service {service:8.1f}/s  raw SQL {raw:8.1f}/s  "
                f"ratio {service / raw:5.2f}",
                flush=True,
            )
        violations = _check(url, wallet_id)
    path = write_results(
        "wallet_debits", {"seconds": args.seconds, "rows": rows, "invariant_violations": violations}
    )
    print(f"invariant violations: {violations}; results in {path}")


def _prepare(url: str) -> int:
    from flask_migrate import upgrade

    from extensions import db
    from services.accounts.customers import create_customer
    from services.wallet import ledger

    app = _app(url)
    with app.app_context():
        upgrade()
        customer = create_customer(f"bench-{uuid.uuid4()}@example.com", "password123", ["EUR"])
        target = ledger.wallet_of(customer, "EUR")
        ledger.credit(target, START_BALANCE, f"bench-start-{uuid.uuid4()}")
        wallet_id = target.id
        db.engine.dispose()
    return wallet_id


def _check(url: str, wallet_id: int) -> int:
    with psycopg.connect(url.replace("+psycopg", "")) as conn:
        balance, total, negative = conn.execute(
            "SELECT w.balance_minor, (SELECT sum(amount_minor) FROM ledger_entries "
            "WHERE wallet_id = w.id), (SELECT count(*) FROM ledger_entries "
            "WHERE wallet_id = w.id AND balance_after_minor < 0) FROM wallets w WHERE w.id = %s",
            (wallet_id,),
        ).fetchone()  # type: ignore[misc]  # psycopg's fetchone is untyped here
    return int(balance != total) + int(negative)


if __name__ == "__main__":
    main()
