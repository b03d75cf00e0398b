"""The straight-line baseline of bench.settle --through-api: the customers' HTTP work
and bench.settle_baseline's durable work per payment, for an order's payment, written
as plainly as they can be, in one process:

  - the API the customers use (bench/shoppers.py, the same program against both), on
    Python's ThreadingHTTPServer over one psycopg connection a thread: an order and its
    line priced from the catalog (one statement), its payment and creation transition
    with the amount from the order (one statement, the order locked), the payment's
    status; each checks the customer's API token by its hash;
  - each new payment handed to a pool of threads that claim it, call the sandbox, and
    write its success in one transaction: the payment, its transition, the order paid,
    its entry in the books (the provider's clearing account against revenue), its
    receipt in the outbox; the receipts sent over one kept SMTP session; the
    provider's webhooks verified, recorded and applied under the payment's row lock.

CPU per payment of this process and PostgreSQL, the customers' process apart.
"""

from __future__ import annotations

import json
import queue
import re
import secrets
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psycopg

from bench.common import postgres_url
from bench.settle_api import CUSTOMERS, WARMUP, measured
from bench.settle_baseline import (
    _cpu_s,
    _postmaster,
    _send_emails,
    _services,
    _wait_webhooks,
    _Webhooks,
    claim_and_charge,
    receipt,
    succeeded,
)
from devtools.servers import free_port
from services.accounts.customers import hash_token
from services.books.journal import POST_SQL

SKU, PRICE_MINOR = "MUG-001", 1200
_ORDER = """
WITH c AS (SELECT id FROM customers WHERE api_token_hash = %(token)s),
p AS (SELECT id, price_minor, currency FROM products WHERE sku = %(sku)s AND is_active),
o AS (
    INSERT INTO orders (customer_id, status, total_minor, currency, created_at, updated_at)
    SELECT c.id, 'open', p.price_minor * %(quantity)s, p.currency, now(), now() FROM c, p
    RETURNING id, total_minor
)
INSERT INTO order_lines (order_id, product_id, quantity, unit_price_minor, line_total_minor)
SELECT o.id, p.id, %(quantity)s, p.price_minor, o.total_minor FROM o, p
RETURNING order_id
"""
_PAYMENT = """
WITH o AS (
    SELECT o.id, o.customer_id, o.total_minor, o.currency FROM orders o
    JOIN customers c ON c.id = o.customer_id
    WHERE o.id = %(order)s AND o.status = 'open' AND c.api_token_hash = %(token)s
    FOR UPDATE OF o
), p AS (
    INSERT INTO payments (idempotency_key, customer_id, purpose, order_id, provider,
        amount_minor, currency, status, payment_method, send_count, reconcile_attempts,
        is_effect_applied, effect_reversals, created_at, updated_at)
    SELECT %(key)s, customer_id, 'order', id, 'stripe', total_minor, currency, 'pending',
        %(card)s, 0, 0, false, 0, now(), now() FROM o
    ON CONFLICT DO NOTHING RETURNING id
), t AS (
    INSERT INTO payment_transitions (payment_id, from_status, to_status, source, reason,
        created_at)
    SELECT id, NULL, 'pending', 'checkout', 'created', now() FROM p
)
SELECT id FROM p
"""
_STATUS = (
    "SELECT p.status FROM payments p JOIN customers c ON c.id = p.customer_id "
    "WHERE p.id = %s AND c.api_token_hash = %s"
)
_CLAIM = (
    "UPDATE payments SET lease_expires_at = now() + interval '30 seconds', "
    "first_sent_at = now(), last_sent_at = now(), send_count = send_count + 1 "
    "WHERE id = %s AND status = 'pending' "
    "RETURNING idempotency_key, amount_minor, currency, payment_method, order_id, customer_id"
)


def baseline_api(count: int, rate: float, timeout_s: float = 300) -> dict[str, Any]:
    """`count` customers at `rate` a second against the straight-line API, after a
    warm-up not counted; CPU per payment of this process and PostgreSQL."""
    with postgres_url() as url, _services(url) as (sandbox, mail_port):
        dsn = url.replace("postgresql+psycopg://", "postgresql://")
        postmaster = _postmaster(dsn)
        emails: queue.Queue[int | None] = queue.Queue()
        sender = threading.Thread(target=_send_emails, args=(dsn, mail_port, emails))
        sender.start()
        _Webhooks.received = 0
        with (
            tempfile.TemporaryDirectory() as tmp,
            ThreadPoolExecutor(64) as pool,
            _Api.serving(dsn, sandbox, pool, emails) as web_url,
        ):
            tokens = _customers(dsn, Path(tmp))
            meter, shopped, ids = measured(
                web_url, tokens, count, rate, timeout_s, lambda: _Meter(postmaster)
            )
            _wait_webhooks(WARMUP + len(ids))
            emails.put(None)
            sender.join()
            meter.stop()
    return {
        "benchmark": "settle_baseline_api",
        "payments": count,
        "settled": len(ids),
        "customers_failed": shopped["failed"],
        "cpu_ms_per_payment": round(meter.spent_s * 1000 / max(1, len(ids)), 2),
    }


class _Meter:
    def __init__(self, postmaster: int) -> None:
        self.postmaster, self.started = postmaster, _cpu_s(postmaster)

    def stop(self) -> None:
        self.spent_s = _cpu_s(self.postmaster) - self.started


def _customers(dsn: str, folder: Path) -> Path:
    tokens = [secrets.token_urlsafe(32) for _ in range(CUSTOMERS)]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO products (sku, name, description, price_minor, currency, is_active) "
            "VALUES (%s, 'Mug', '', %s, 'EUR', true)",
            (SKU, PRICE_MINOR),
        )
        for i, token in enumerate(tokens):
            conn.execute(
                "INSERT INTO customers (email, password_hash, api_token_hash, created_at) "
                "VALUES (%s, 'x', %s, now())",
                (f"shopper-{i}@example.com", hash_token(token)),
            )
    path = folder / "tokens.txt"
    path.write_text("\n".join(tokens) + "\n")
    return path


class _Api(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # kept alive, as gunicorn keeps them
    dsn = sandbox = ""
    pool: ThreadPoolExecutor
    emails: queue.Queue[int | None]
    local = threading.local()

    @classmethod
    @contextmanager
    def serving(
        cls, dsn: str, sandbox: str, pool: ThreadPoolExecutor, emails: Any
    ) -> Iterator[str]:
        """The API served on a free port (its URL) until the block ends."""
        cls.dsn, cls.sandbox, cls.pool, cls.emails = dsn, sandbox, pool, emails
        server = ThreadingHTTPServer(("127.0.0.1", free_port()), cls)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_port}"
        finally:
            server.shutdown()

    def _conn(self) -> psycopg.Connection[Any]:
        if not hasattr(self.local, "conn"):
            self.local.conn = psycopg.connect(self.dsn, autocommit=True)
        conn: psycopg.Connection[Any] = self.local.conn
        return conn

    def _token(self) -> str:
        return hash_token(self.headers.get("Authorization", "").removeprefix("Bearer "))

    def _answer(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/api/orders":
            item = body["items"][0]
            params = {"token": self._token(), "sku": item["sku"], "quantity": item["quantity"]}
            row = self._conn().execute(_ORDER, params).fetchone()
            if row is None:
                self._answer(422, {})
            else:
                self._answer(201, {"id": row[0]})
            return
        found = re.fullmatch(r"/api/orders/(\d+)/payments", self.path)
        assert found is not None
        params = {
            "order": int(found[1]),
            "token": self._token(),
            "key": self.headers["Idempotency-Key"],
            "card": body["payment_method"],
        }
        row = self._conn().execute(_PAYMENT, params).fetchone()
        if row is None:
            self._answer(409, {})
            return
        self.pool.submit(_settle_order, self.dsn, self.sandbox, row[0], self.emails)
        self._answer(201, {"id": row[0], "status": "pending", "is_final": False})

    def do_GET(self) -> None:
        payment_id = int(self.path.rsplit("/", 1)[1])
        row = self._conn().execute(_STATUS, (payment_id, self._token())).fetchone()
        if row is None:
            self._answer(404, {})
            return
        status = row[0]
        self._answer(200, {"id": payment_id, "status": status, "is_final": status != "pending"})

    def log_message(self, format: str, *args: Any) -> None:
        return


_local = threading.local()


def _settle_order(dsn: str, sandbox: str, payment_id: int, emails: Any) -> None:
    conn, claimed, answer = claim_and_charge(_local, dsn, sandbox, _CLAIM, payment_id)
    _, amount, currency, _, order_id, customer_id = claimed
    with conn.transaction():
        conn.execute("SELECT id FROM orders WHERE id = %s FOR UPDATE", (order_id,))
        succeeded(conn, payment_id, answer["id"])
        conn.execute(
            "UPDATE orders SET status = 'paid', paid_at = now(), updated_at = now() WHERE id = %s",
            (order_id,),
        )
        conn.execute(
            POST_SQL,
            ("payment", payment_id, "succeeded", datetime.now(UTC),
             ["clearing:stripe", "revenue"], [amount, -amount], [currency, currency],
             [None, None]),
        )  # fmt: skip
        outbox_id = receipt(conn, payment_id, customer_id)
    emails.put(outbox_id)
