"""The straight-line baseline of bench.settle: the same durable work per payment as the
system does, written as plainly as it can be, in one process, to say what a settled
payment costs at least (CPU per payment, this process and PostgreSQL):

  1. claim the pending top-up and mark it sent (one UPDATE);
  2. the provider call (POST /v1/payment_intents to the sandbox, its idempotency key),
     and for a customer's first payment its Stripe Customer (POST /v1/customers) and
     its row, as the product makes it beside the charge;
  3. the outcome in one transaction: the payment succeeded, its transition, the wallet
     locked and credited with its ledger entry and its entry in the books, the receipt
     in the outbox;
  4. the provider's webhooks received over HTTP, their signature verified, recorded
     under UNIQUE(provider, event_id) and applied under the payment's row lock;
  5. the receipt sent over one kept SMTP session, its outbox row marked sent.

No queue, no framework, no ORM, no breaker, no logs, no metrics: what is left is the
work. `python -m bench.settle_baseline [--payments 300]`; bench.settle runs it beside
the system in one run. The last line is JSON.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import queue
import smtplib
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import requests
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from bench.common import bulk_topups, cpu_s, postgres_url
from bench.drills.stack import PROJECT_DIR, migrate
from devtools.servers import free_port, wait_for_port
from services.books.journal import POST_SQL

SECRET_KEY, WEBHOOK_SECRET = "sk_test_sandbox", "whsec_sandbox"
WARMUP = 30  # payments settled before the measured ones, not counted

_CLAIM = (
    "UPDATE payments SET lease_expires_at = now() + interval '30 seconds', "
    "first_sent_at = now(), last_sent_at = now(), send_count = send_count + 1 "
    "WHERE id = %s AND status = 'pending' "
    "RETURNING idempotency_key, amount_minor, currency, payment_method, wallet_id, customer_id"
)

_HAS_CUSTOMER = "SELECT 1 FROM provider_customers WHERE customer_id = %s AND provider = 'stripe'"
_NEW_CUSTOMER = (
    "INSERT INTO provider_customers (customer_id, provider, provider_customer_id, created_at) "
    "VALUES (%s, 'stripe', %s, now()) ON CONFLICT (customer_id, provider) DO NOTHING"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--payments", type=int, default=300)
    args = parser.parse_args()
    result = baseline(args.payments)
    print(json.dumps(result))


def baseline(count: int, warmup: int = WARMUP, threads: int = 16) -> dict[str, Any]:
    """Settle `count` top-ups straight-line, after `warmup` more not counted (connections
    opened, caches filled: a long-running process's steady state); CPU per payment of
    this process and PostgreSQL."""
    with postgres_url() as url, _services(url) as (sandbox, mail_port):
        engine = create_engine(url)
        with Session(engine) as session:
            ids = bulk_topups(
                SimpleNamespace(session=session), warmup + count, "pending", "baseline"
            )
        engine.dispose()
        dsn = url.replace("postgresql+psycopg://", "postgresql://")
        postmaster = _postmaster(dsn)
        emails: queue.Queue[int | None] = queue.Queue()
        sender = threading.Thread(target=_send_emails, args=(dsn, mail_port, emails))
        sender.start()
        local = threading.local()
        _Webhooks.received = 0
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda i: _settle(local, dsn, sandbox, i, emails), ids[:warmup]))
            emails.join()
            _wait_webhooks(warmup)
            cpu_before = _cpu_s(postmaster)
            started = time.monotonic()
            list(pool.map(lambda i: _settle(local, dsn, sandbox, i, emails), ids[warmup:]))
        emails.put(None)
        sender.join()
        with psycopg.connect(dsn, autocommit=True) as conn:
            _wait_webhooks(warmup + count)
            succeeded = conn.execute(
                "SELECT count(*) FROM payments WHERE status = 'succeeded' AND id = ANY(%s)",
                (ids[warmup:],),
            ).fetchone()
        seconds = time.monotonic() - started
        cpu_ms = (_cpu_s(postmaster) - cpu_before) * 1000
    settled = int(succeeded[0]) if succeeded else 0
    return {
        "benchmark": "settle_baseline",
        "payments": count,
        "warmup": warmup,
        "settled": settled,
        "seconds": round(seconds, 2),
        "cpu_ms_per_payment": round(cpu_ms / max(1, settled), 2),
    }


def claim_and_charge(
    local: threading.local, dsn: str, sandbox: str, claim: str, payment_id: int
) -> tuple[psycopg.Connection[Any], tuple[Any, ...], dict[str, Any]]:
    """The thread's own connection and HTTP session (made on its first payment); the
    payment claimed by `claim` (its first four columns: key, amount, currency, card) and
    charged at the sandbox: (the connection, the claimed row, the provider's answer)."""
    if not hasattr(local, "conn"):
        local.conn = psycopg.connect(dsn, autocommit=True)
        local.http = requests.Session()
        local.http.headers["Authorization"] = f"Bearer {SECRET_KEY}"
    conn: psycopg.Connection[Any] = local.conn
    claimed = conn.execute(claim, (payment_id,)).fetchone()
    assert claimed is not None
    key, amount, currency, card = claimed[:4]
    answer = local.http.post(
        f"{sandbox}/v1/payment_intents",
        data={
            "amount": str(amount),
            "currency": currency.lower(),
            "confirm": "true",
            "allowed_payment_method_types[]": "card",
            "payment_method": card,
            "metadata[payment_id]": str(payment_id),
        },
        headers={"Idempotency-Key": str(key)},
        timeout=30,
    ).json()
    assert answer["status"] == "succeeded" and answer["amount"] == amount, answer
    _provider_customer(local, conn, sandbox, claimed[-1])
    return conn, tuple(claimed), answer


def _provider_customer(
    local: threading.local, conn: psycopg.Connection[Any], sandbox: str, customer_id: int
) -> None:
    """A customer's first payment also makes its Stripe Customer, as the product does
    (services/accounts/provider_customers.py, a job beside the charge): every customer
    of the benchmarks pays for the first time."""
    if conn.execute(_HAS_CUSTOMER, (customer_id,)).fetchone() is not None:
        return
    made = local.http.post(
        f"{sandbox}/v1/customers",
        data={"metadata[customer_id]": str(customer_id)},
        headers={"Idempotency-Key": f"customer-{customer_id}"},
        timeout=30,
    ).json()
    assert made["metadata"]["customer_id"] == str(customer_id), made
    conn.execute(_NEW_CUSTOMER, (customer_id, made["id"]))


def succeeded(conn: psycopg.Connection[Any], payment_id: int, provider_id: str) -> None:
    """The payment succeeded with its provider id, and its transition."""
    conn.execute(
        "UPDATE payments SET status = 'succeeded', provider_payment_id = %s, "
        "lease_expires_at = NULL, is_effect_applied = true, updated_at = now() "
        "WHERE id = %s AND status = 'pending'",
        (provider_id, payment_id),
    )
    conn.execute(
        "INSERT INTO payment_transitions (payment_id, from_status, to_status, source, "
        "reason, created_at) VALUES (%s, 'pending', 'succeeded', 'charge', %s, now())",
        (payment_id, f"provider payment {provider_id}"),
    )


def receipt(conn: psycopg.Connection[Any], payment_id: int, customer_id: int) -> int:
    """The payment's receipt in the outbox: its row's id."""
    outbox = conn.execute(
        "INSERT INTO outbox (kind, subject_id, recipient, status, attempts, created_at, "
        "updated_at) SELECT 'receipt', %s, email, 'pending', 0, now(), now() "
        "FROM customers WHERE id = %s RETURNING id",
        (payment_id, customer_id),
    ).fetchone()
    assert outbox is not None
    return int(outbox[0])


def _settle(local: threading.local, dsn: str, sandbox: str, payment_id: int, emails: Any) -> None:
    conn, claimed, answer = claim_and_charge(local, dsn, sandbox, _CLAIM, payment_id)
    _, amount, currency, _, wallet_id, customer_id = claimed
    with conn.transaction():
        succeeded(conn, payment_id, answer["id"])
        balance = conn.execute(
            "SELECT balance_minor FROM wallets WHERE id = %s FOR UPDATE", (wallet_id,)
        ).fetchone()
        assert balance is not None
        after = balance[0] + amount
        entry = conn.execute(
            "INSERT INTO ledger_entries (wallet_id, operation_id, amount_minor, kind, "
            "source_kind, source_id, memo, balance_after_minor, created_at) VALUES (%s, %s, "
            "%s, 'topup', 'payment', %s, '', %s, now()) RETURNING id",
            (
                wallet_id,
                f"topup:{payment_id}",
                amount,
                payment_id,
                balance[0] + amount,
            ),
        ).fetchone()
        assert entry is not None
        # Its entry in the books, as the product writes it (one statement).
        conn.execute(
            POST_SQL,
            ("payment", payment_id, "succeeded", datetime.now(UTC),
             ["clearing:stripe", f"wallet:{wallet_id}"], [amount, -amount], [currency, currency],
             [None, entry[0]]),
        )  # fmt: skip
        conn.execute(
            "UPDATE wallets SET balance_minor = %s, updated_at = now() WHERE id = %s",
            (after, wallet_id),
        )
        outbox_id = receipt(conn, payment_id, customer_id)
    emails.put(outbox_id)


def _send_emails(dsn: str, mail_port: int, emails: queue.Queue[int | None]) -> None:
    with (
        psycopg.connect(dsn, autocommit=True) as conn,
        smtplib.SMTP("127.0.0.1", mail_port) as smtp,
    ):
        while (outbox_id := emails.get()) is not None:
            _send_one(conn, smtp, outbox_id)
            emails.task_done()
        emails.task_done()


def _send_one(conn: psycopg.Connection[Any], smtp: smtplib.SMTP, outbox_id: int) -> None:
    row = conn.execute(
        "SELECT recipient, subject_id FROM outbox WHERE id = %s", (outbox_id,)
    ).fetchone()
    assert row is not None
    message = EmailMessage()
    message["From"], message["To"] = "shop@example.com", row[0]
    message["Subject"] = f"Your receipt for payment {row[1]}"
    message.set_content(f"We received your payment {row[1]}. Thank you.")
    smtp.send_message(message)
    conn.execute(
        "UPDATE outbox SET status = 'sent', sent_at = now(), attempts = 1 WHERE id = %s",
        (outbox_id,),
    )


class _Webhooks(BaseHTTPRequestHandler):
    dsn = ""
    received = 0
    lock = threading.Lock()
    local = threading.local()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        fields = dict(p.split("=", 1) for p in self.headers["Stripe-Signature"].split(","))
        signed = f"{fields['t']}.".encode() + body
        expected = hmac.new(WEBHOOK_SECRET.encode(), signed, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, fields["v1"]):
            self.send_response(400)
            self.end_headers()
            return
        event = json.loads(body)
        if not hasattr(self.local, "conn"):
            self.local.conn = psycopg.connect(self.dsn, autocommit=True)
        conn: psycopg.Connection[Any] = self.local.conn
        payment_ref = event["data"]["object"].get("metadata", {}).get("payment_id")
        with conn.transaction():
            recorded = conn.execute(
                "INSERT INTO processed_webhooks (provider, event_id, event_type, state, note, "
                "payload, received_at) VALUES ('stripe', %s, %s, 'pending', '', %s, now()) "
                "ON CONFLICT DO NOTHING RETURNING id",
                (event["id"], event["type"], body.decode()),
            ).fetchone()
            if recorded is not None and payment_ref:
                conn.execute(
                    "SELECT status FROM payments WHERE id = %s FOR UPDATE", (int(payment_ref),)
                )
                conn.execute(
                    "UPDATE processed_webhooks SET state = 'applied', payment_id = %s, "
                    "processed_at = now() WHERE id = %s",
                    (int(payment_ref), recorded[0]),
                )
        with self.lock:
            _Webhooks.received += 1
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


def _wait_webhooks(count: int) -> None:
    """Until every payment's webhooks came, and a second passed without a new one."""
    deadline, last, quiet_since = time.monotonic() + 120, -1, time.monotonic()
    while time.monotonic() < deadline:
        seen = _Webhooks.received
        if seen != last:
            last, quiet_since = seen, time.monotonic()
        elif seen >= count and time.monotonic() - quiet_since > 1:
            return
        time.sleep(0.1)
    raise SystemExit(f"baseline: {_Webhooks.received} webhooks for {count} payments")


@contextmanager
def _services(dsn: str) -> Iterator[tuple[str, int]]:
    """The schema; the sandbox (its webhooks to a receiver in this process); a mail sink."""
    migrate({**os.environ, "DATABASE_URL": dsn})
    _Webhooks.dsn = dsn.replace("postgresql+psycopg://", "postgresql://")
    receiver = ThreadingHTTPServer(("127.0.0.1", free_port()), _Webhooks)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    sandbox_port, mail_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as tmp:
        hook = f"http://127.0.0.1:{receiver.server_port}/webhooks"
        procs = [
            subprocess.Popen(
                [
                    *(sys.executable, "-m", "sandbox", "--port", str(sandbox_port)),
                    *("--db", f"{tmp}/sandbox.db", "--webhook-url", hook),
                ],
                cwd=PROJECT_DIR,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ),
            subprocess.Popen(
                [
                    *(sys.executable, "-m", "devtools.mail_sink", "--port", str(mail_port)),
                    *("--dir", f"{tmp}/mail"),
                ],
                cwd=PROJECT_DIR,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ),
        ]
        try:
            wait_for_port(sandbox_port)
            wait_for_port(mail_port)
            yield f"http://127.0.0.1:{sandbox_port}", mail_port
        finally:
            receiver.shutdown()
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=10)


def _postmaster(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SHOW data_directory").fetchone()
    assert row is not None
    return int((Path(row[0]) / "postmaster.pid").read_text().split()[0])


def _cpu_s(postmaster: int) -> float:
    """This process (all its threads; not the sandbox and mail sink it started) and
    PostgreSQL (the postmaster and its backends)."""
    own = os.times()
    return own.user + own.system + cpu_s([postmaster])


if __name__ == "__main__":
    main()
