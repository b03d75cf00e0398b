"""The sandbox's state: one SQLite file, so every thread (and process) sees one provider."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS payment_intents (
    id TEXT PRIMARY KEY, amount INTEGER NOT NULL, currency TEXT NOT NULL,
    status TEXT NOT NULL, payment_method TEXT, metadata TEXT NOT NULL,
    last_payment_error TEXT, created INTEGER NOT NULL,
    body TEXT);  -- the whole PaymentIntent object as the API returns it
-- Stripe's idempotency layer: a key is in flight until its first request finishes.
CREATE TABLE IF NOT EXISTS idempotency_keys (
    key TEXT PRIMARY KEY, params_hash TEXT NOT NULL, state TEXT NOT NULL,
    status_code INTEGER, body TEXT, created REAL NOT NULL);
-- The ledger of real money movement: what a customer's bank statement would show.
CREATE TABLE IF NOT EXISTS charges (
    id INTEGER PRIMARY KEY, dialect TEXT NOT NULL, object_id TEXT NOT NULL,
    payment_ref TEXT, order_ref TEXT, amount INTEGER NOT NULL, currency TEXT NOT NULL,
    status TEXT NOT NULL, created REAL NOT NULL);
-- Refunds, both dialects: money back to a customer (the other half of the ledger).
CREATE TABLE IF NOT EXISTS refunds (
    id TEXT PRIMARY KEY, dialect TEXT NOT NULL, payment_object_id TEXT NOT NULL,
    payment_ref TEXT, refund_ref TEXT, amount INTEGER NOT NULL, currency TEXT NOT NULL,
    status TEXT NOT NULL, created REAL NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS ix_refunds_payment ON refunds(payment_object_id);
-- A refund's later outcome (Stripe's test cards: pending -> succeeded, succeeded -> failed).
CREATE TABLE IF NOT EXISTS refund_changes (
    refund_id TEXT PRIMARY KEY, status TEXT NOT NULL, due REAL NOT NULL);
-- Disputes of Stripe charges (sandbox/stripe_disputes.py): the API's object as `body`.
CREATE TABLE IF NOT EXISTS disputes (
    id TEXT PRIMARY KEY, payment_intent TEXT NOT NULL, status TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    id TEXT PRIMARY KEY, dialect TEXT NOT NULL, type TEXT NOT NULL, created INTEGER NOT NULL,
    body TEXT NOT NULL, copies INTEGER NOT NULL DEFAULT 1, attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL, delivered_at REAL, is_dropped INTEGER NOT NULL DEFAULT 0,
    seq INTEGER);
CREATE TABLE IF NOT EXISTS faults (
    id INTEGER PRIMARY KEY, kind TEXT NOT NULL, dialect TEXT, endpoint TEXT,
    rate REAL NOT NULL DEFAULT 1.0, remaining INTEGER, params TEXT NOT NULL,
    created REAL NOT NULL);
-- Payment methods created from test card numbers (Stripe.js's createPaymentMethod).
CREATE TABLE IF NOT EXISTS payment_methods (
    id TEXT PRIMARY KEY, outcome TEXT NOT NULL, decline_code TEXT, created INTEGER NOT NULL);
-- Customers (POST /v1/customers): a PaymentIntent may name one, and the list filters by it.
CREATE TABLE IF NOT EXISTS customers (
    id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);
-- Stripe's balance (sandbox/stripe/balance.py): the API's objects as `body`.
CREATE TABLE IF NOT EXISTS balance_transactions (
    id TEXT PRIMARY KEY, created INTEGER NOT NULL, available_on INTEGER NOT NULL,
    type TEXT NOT NULL, source TEXT NOT NULL, currency TEXT NOT NULL, net INTEGER NOT NULL,
    payout TEXT, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS ix_balance_payout ON balance_transactions(payout);
CREATE INDEX IF NOT EXISTS ix_balance_source ON balance_transactions(source);
CREATE TABLE IF NOT EXISTS payouts (
    id TEXT PRIMARY KEY, created INTEGER NOT NULL, arrival_date INTEGER NOT NULL,
    status TEXT NOT NULL, currency TEXT NOT NULL, amount INTEGER NOT NULL, body TEXT NOT NULL);
-- Braintree's transactions (sandbox/braintree/): the gateway's object as `body` (JSON).
CREATE TABLE IF NOT EXISTS braintree_transactions (
    id TEXT PRIMARY KEY, order_id TEXT, status TEXT NOT NULL, card TEXT NOT NULL,
    amount TEXT NOT NULL, created REAL NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS ix_bt_order ON braintree_transactions(order_id);
CREATE INDEX IF NOT EXISTS ix_bt_card ON braintree_transactions(card, amount);
CREATE TABLE IF NOT EXISTS braintree_nonces (
    nonce TEXT PRIMARY KEY, number TEXT NOT NULL, created REAL NOT NULL, spent REAL);
CREATE TABLE IF NOT EXISTS braintree_disputes (
    id TEXT PRIMARY KEY, transaction_id TEXT NOT NULL, status TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS requests (
    id INTEGER PRIMARY KEY, dialect TEXT NOT NULL, endpoint TEXT NOT NULL,
    method TEXT NOT NULL, idempotency_key TEXT, at REAL NOT NULL, api_version TEXT);
"""
# Columns added after a state file may already exist (make run keeps one under instance/).
ADDED_COLUMNS = (
    ("payment_intents", "body", "TEXT"),
    ("requests", "api_version", "TEXT"),
    ("payment_methods", "brand", "TEXT"),
    ("payment_methods", "last4", "TEXT"),
)


class Store:
    """Thread-safe access to the sandbox database (one connection per thread)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._local = threading.local()
        # Bumped by reset(): a request that began before a reset (a hung one, say)
        # must not write into the new, empty world when it finally wakes up.
        self.generation = 0
        self._conn().executescript(SCHEMA)
        for table, column, kind in ADDED_COLUMNS:
            names = {row["name"] for row in self._conn().execute(f"PRAGMA table_info({table})")}
            if column not in names:
                self._conn().execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
        self._fill_intent_bodies()
        # After the added columns (a kept state file may predate `body`): a balance
        # transaction's expanded source finds its charge's PaymentIntent by this.
        self._conn().execute(
            "CREATE INDEX IF NOT EXISTS ix_intents_latest_charge "
            "ON payment_intents(json_extract(body, '$.latest_charge'))"
        )

    def _fill_intent_bodies(self) -> None:
        """Intents stored before the whole object was kept get one built from their
        columns, so a kept state file still answers retrieve and search for them."""
        from sandbox.stripe.objects import legacy_intent

        rows = self._conn().execute("SELECT * FROM payment_intents WHERE body IS NULL").fetchall()
        with self.transaction() as conn:
            for row in rows:
                conn.execute(
                    "UPDATE payment_intents SET body = ? WHERE id = ?",
                    (json.dumps(legacy_intent(dict(row))), row["id"]),
                )

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path, timeout=30, isolation_level=None, check_same_thread=False
            )
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=30000")
            self._local.conn = conn
        return conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE: one writer at a time, so check-then-write is atomic here."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (reads outside a transaction)."""
        return self._conn()

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        return self._conn().execute(sql, args).fetchall()

    def log_request(
        self, dialect: str, endpoint: str, method: str, key: str | None, api_version: str | None
    ) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO requests (dialect, endpoint, method, idempotency_key, at, "
                "api_version) VALUES (?, ?, ?, ?, ?, ?)",
                (dialect, endpoint, method, key, time.time(), api_version),
            )

    def record_charge(
        self,
        conn: sqlite3.Connection,
        dialect: str,
        object_id: str,
        payment_ref: str | None,
        order_ref: str | None,
        amount: int,
        currency: str,
        status: str,
    ) -> None:
        conn.execute(
            "INSERT INTO charges (dialect, object_id, payment_ref, order_ref, amount, currency, "
            "status, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (dialect, object_id, payment_ref, order_ref, amount, currency, status, time.time()),
        )

    def record_refund(self, conn: sqlite3.Connection, dialect: str, refund: dict[str, Any]) -> None:
        """Keep a refund (the API's object as `body`) in the money ledger."""
        conn.execute(
            "INSERT INTO refunds (id, dialect, payment_object_id, payment_ref, refund_ref, "
            "amount, currency, status, created, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                refund["id"],
                dialect,
                refund["_payment"],
                refund["_payment_ref"],
                refund["_refund_ref"],
                refund["amount"],
                refund["currency"].upper(),
                refund["status"],
                time.time(),
                dumps({k: v for k, v in refund.items() if not k.startswith("_")}),
            ),
        )

    def refunded(self, conn: sqlite3.Connection, payment_object_id: str) -> int:
        """What has gone back for a payment (refunds that did not fail)."""
        row = conn.execute(
            "SELECT COALESCE(SUM(amount), 0) FROM refunds WHERE payment_object_id = ? "
            "AND status NOT IN ('failed', 'canceled', 'declined')",
            (payment_object_id,),
        ).fetchone()
        return int(row[0])

    def reset(self) -> None:
        self.generation += 1
        with self.transaction() as conn:
            for table in (
                "payment_intents",
                "payment_methods",
                "idempotency_keys",
                "charges",
                "refunds",
                "refund_changes",
                "disputes",
                "balance_transactions",
                "braintree_transactions",
                "braintree_disputes",
                "braintree_nonces",
                "payouts",
                "events",
                "faults",
                "requests",
            ):
                conn.execute(f"DELETE FROM {table}")


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
