"""A year of history, bulk-loaded with COPY: final payments with their orders,
transitions, webhook events, ledger entries, provider calls and emails; and a small
present (live payments, pending events, unsent emails, open refunds) that stays the same
however long the history grows.

Rows get explicit ids (history in blocks of ids; the sequences move past them at the
end), so the history can grow in steps: 10k, then 90k more, then 900k more.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

CUSTOMERS_PER = 100  # one customer (and EUR wallet) per this many history payments
LIVE_IDS = range(1, 101)  # the present: payments 1-100 (the first customer's)
DAY = 86_400


def connect(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url.replace("+psycopg", ""), autocommit=True)


def load_present(conn: psycopg.Connection[Any], now: datetime) -> None:
    """100 live payments (pending, unknown, requires action, needs review), 20 webhook
    events waiting for a payment we do not know yet, 10 unsent emails, 5 open refunds."""
    conn.execute(
        "INSERT INTO customers (id, email, password_hash, created_at) "
        "VALUES (1, 'present@example.com', 'x', %s)",
        (now,),
    )
    conn.execute(
        "INSERT INTO wallets (id, customer_id, currency, balance_minor, updated_at) "
        "VALUES (1, 1, 'EUR', 0, %s)",
        (now,),
    )
    live = ["pending"] * 30 + ["unknown"] * 30 + ["requires_action"] * 20 + ["needs_review"] * 20
    with conn.cursor().copy(_copy("orders", ORDER_COLUMNS)) as copy:
        for pid in LIVE_IDS:
            copy.write_row((pid, 1, "open", 1400, "EUR", now, now, None))
    with conn.cursor().copy(_copy("payments", PAYMENT_COLUMNS)) as copy:
        for pid, status in zip(LIVE_IDS, live, strict=True):
            at = now - timedelta(minutes=10)
            due = now - timedelta(seconds=5) if status in ("unknown", "requires_action") else None
            copy.write_row(_payment(pid, 1, "order", pid, None, status, at, due))
    with conn.cursor().copy(_copy("payment_transitions", TRANSITION_COLUMNS)) as copy:
        for pid, status in zip(LIVE_IDS, live, strict=True):
            for row in _transitions(pid, status, now - timedelta(minutes=10), 0):
                copy.write_row(row)
    with conn.cursor().copy(_copy("processed_webhooks", WEBHOOK_COLUMNS)) as copy:
        for n in range(20):
            row = _webhook(f"evt_present_{n}", f"pi_unknown_to_us_{n}", None, "pending", now, None)
            copy.write_row((*row[:6], stripe_event(row[1], f"pi_unknown_to_us_{n}", now), *row[7:]))
    with conn.cursor().copy(_copy("outbox", OUTBOX_COLUMNS)) as copy:
        for n in range(10):
            at = now - timedelta(minutes=10)
            copy.write_row(("receipt", n + 1, "present@example.com", "pending", 0, None, at, at))
    conn.execute(
        "INSERT INTO refunds (idempotency_key, payment_id, order_id, provider, amount_minor, "
        "currency, reason, actor, status, send_count, reconcile_attempts, is_effect_applied, "
        "created_at, updated_at, next_reconcile_at) "
        "SELECT gen_random_uuid(), id, order_id, 'stripe', 100, 'EUR', 'bench', 'bench', "
        "'unknown', 1, 0, false, %s, %s, %s FROM payments WHERE id <= 5",
        (now - timedelta(minutes=10), now - timedelta(minutes=10), now - timedelta(seconds=5)),
    )


def load_history(conn: psycopg.Connection[Any], first: int, count: int, now: datetime) -> None:
    """`count` final payments with ids from `first`, spread over the past year."""
    rng = random.Random(first)
    ids = range(first, first + count)
    plan = [(pid, *_history_plan(rng, now)) for pid in ids]
    customers = range(_customer(first), _customer(first + count - 1) + 1)
    with conn.cursor().copy(
        _copy("customers", ("id", "email", "password_hash", "created_at"))
    ) as c:
        for cid in customers:
            c.write_row((cid, f"history-{cid}@example.com", "x", now - timedelta(days=400)))
    with conn.cursor().copy(
        _copy("wallets", ("id", "customer_id", "currency", "balance_minor", "updated_at"))
    ) as c:
        for cid in customers:
            c.write_row((cid, cid, "EUR", 0, now))
    _copy_rows(conn, "orders", ORDER_COLUMNS, _orders(plan))
    _copy_rows(conn, "payments", PAYMENT_COLUMNS, _payments(plan))
    _copy_rows(conn, "payment_transitions", TRANSITION_COLUMNS, _all_transitions(plan))
    _copy_rows(conn, "processed_webhooks", WEBHOOK_COLUMNS, _webhooks(plan))
    with conn.transaction():  # each ledger entry with its posting, as the database checks
        # Statistics of what was just loaded (ANALYZE may run in the transaction and
        # sees its rows): planned with those from before the load, joining the new
        # entries to their credits, and the deferred triggers' lookup of each new row
        # at the commit, read what looked like small tables over and over (a 1M load
        # did not finish in 8 minutes).
        _copy_rows(conn, "ledger_entries", LEDGER_COLUMNS, _ledger(plan))
        conn.execute("ANALYZE ledger_entries, wallets")
        conn.execute(_BOOKED, (first, first + count - 1))
        conn.execute(_ORDERS_BOOKED, (first, first + count - 1))
        conn.execute("ANALYZE postings, journal_entries")
    _copy_rows(conn, "provider_calls", CALL_COLUMNS, _calls(plan))
    _copy_rows(conn, "outbox", OUTBOX_COLUMNS, _emails(plan))
    # Wallet balances equal their ledger; the sequences move past the explicit ids.
    conn.execute(
        "UPDATE wallets w SET balance_minor = s.total FROM (SELECT wallet_id, sum(amount_minor) "
        "total FROM ledger_entries GROUP BY wallet_id) s WHERE s.wallet_id = w.id"
    )
    for table in ("customers", "wallets", "orders", "payments"):
        conn.execute(f"SELECT setval('{table}_id_seq', (SELECT max(id) FROM {table}))")
    # A year-old table has been vacuumed: hint bits set, visibility map current (and no
    # autovacuum of the fresh rows running under the measurements).
    conn.execute("VACUUM (FREEZE, ANALYZE)")
    conn.execute("CHECKPOINT")


def _history_plan(rng: random.Random, now: datetime) -> tuple[str, str, datetime]:
    """(purpose, final status, created_at): 94 % succeeded, 5 % failed, the rest resolved
    by a person; 10 % are wallet top-ups; the times spread over the past year."""
    roll = rng.random()
    status = "succeeded" if roll < 0.94 else "failed" if roll < 0.99 else "needs_review"
    if status == "needs_review":
        status = "succeeded"  # decided by an admin since: final like the rest
    purpose = "wallet_topup" if rng.random() < 0.1 else "order"
    at = now - timedelta(seconds=rng.uniform(DAY, 365 * DAY))
    return purpose, status, at


def _customer(pid: int) -> int:
    """History payments 101-200 are customer 3's, and so on (1 is the present's)."""
    return (pid - 1) // CUSTOMERS_PER + 2


def _orders(plan: list[Any]) -> Iterator[tuple[Any, ...]]:
    for pid, purpose, status, at in plan:
        if purpose == "order":
            paid = status == "succeeded"
            yield (pid, _customer(pid), "paid" if paid else "open", 1400, "EUR", at, at,
                   at if paid else None)  # fmt: skip


def _payments(plan: list[Any]) -> Iterator[tuple[Any, ...]]:
    for pid, purpose, status, at in plan:
        order, wallet = (pid, None) if purpose == "order" else (None, _customer(pid))
        yield _payment(pid, _customer(pid), purpose, order, wallet, status, at, None)


def _payment(
    pid: int, customer: int, purpose: str, order: int | None, wallet: int | None,
    status: str, at: datetime, due: datetime | None,
) -> tuple[Any, ...]:  # fmt: skip
    sent = status != "pending"
    provider_id = f"pi_h{pid}" if sent else None
    applied = status == "succeeded"
    return (pid, uuid.uuid4(), customer, purpose, order, wallet, "stripe", 1400, "EUR", status,
            provider_id, "pm_card_visa", at if sent else None, at if sent else None,
            1 if sent else 0, due, 0, applied, 0, at, at)  # fmt: skip


def _all_transitions(plan: list[Any]) -> Iterator[tuple[Any, ...]]:
    for pid, _, status, at in plan:
        yield from _transitions(pid, status, at, pid % 20)


def _transitions(pid: int, status: str, at: datetime, via: int) -> Iterator[tuple[Any, ...]]:
    yield (pid, None, "pending", "checkout", "payment created", at)
    if status == "pending":
        return
    if via == 0 and status != "unknown":  # one in twenty went through unknown
        yield (pid, "pending", "unknown", "charge", "timeout", at + timedelta(seconds=2))
        yield (pid, "unknown", status, "reconcile", "provider says", at + timedelta(seconds=30))
        return
    yield (pid, "pending", status, "charge", "provider answered", at + timedelta(seconds=1))


def _webhooks(plan: list[Any]) -> Iterator[tuple[Any, ...]]:
    for pid, _, status, at in plan:
        yield _webhook(f"evt_h{pid}", f"pi_h{pid}", pid, "applied", at, status)
        if pid % 10 == 0:  # a redelivered copy came in later, older than what was applied
            yield _webhook(f"evt_h{pid}_late", f"pi_h{pid}", pid, "ignored", at, status)


def _webhook(
    event_id: str, provider_id: str, pid: int | None, state: str, at: datetime,
    status: str | None,
) -> tuple[Any, ...]:  # fmt: skip
    kind = "payment_intent.payment_failed" if status == "failed" else "payment_intent.succeeded"
    payload = (
        f'{{"id": "{event_id}", "object": "event", "type": "{kind}", '
        f'"data": {{"object": {{"id": "{provider_id}", "object": "payment_intent"}}}}}}'
    )
    processed = None if state == "pending" else at + timedelta(seconds=3)
    return ("stripe", event_id, kind, state, pid, state, payload, at, at + timedelta(seconds=2),
            processed)  # fmt: skip


def stripe_event(event_id: str, provider_id: str, at: datetime) -> str:
    """A whole `payment_intent.succeeded` event as Stripe sends it (no payment_id in its
    metadata: it is matched by the provider's id)."""
    return json.dumps(
        {
            "id": event_id,
            "object": "event",
            "type": "payment_intent.succeeded",
            "created": int(at.timestamp()),
            "data": {
                "object": {
                    "id": provider_id,
                    "object": "payment_intent",
                    "status": "succeeded",
                    "amount": 1400,
                    "currency": "eur",
                    "metadata": {},
                }
            },
        }
    )


# Each top-up's success in the books, its wallet's leg naming its ledger entry (the
# database checks every ledger entry has it: migration 0030).
_BOOKED = """
WITH credits AS (
    SELECT id, wallet_id, source_id, amount_minor, created_at FROM ledger_entries
    WHERE kind = 'topup' AND source_id BETWEEN %s AND %s
), entries AS (
    INSERT INTO journal_entries (source_kind, source_id, step, created_at)
    SELECT 'payment', source_id, 'succeeded', created_at FROM credits RETURNING id, source_id
)
INSERT INTO postings (entry_id, account, amount_minor, currency, ledger_entry_id)
SELECT e.id, leg.account, leg.amount_minor, 'EUR', leg.ledger_entry_id
FROM entries e JOIN credits c ON c.source_id = e.source_id CROSS JOIN LATERAL (VALUES
    ('clearing:stripe', c.amount_minor, NULL::bigint),
    ('wallet:' || c.wallet_id, -c.amount_minor, c.id))
    AS leg(account, amount_minor, ledger_entry_id)
"""


# ... and each order's payment's: revenue.
_ORDERS_BOOKED = """
WITH paid AS (
    SELECT id, amount_minor, currency, updated_at FROM payments
    WHERE order_id IS NOT NULL AND is_effect_applied AND id BETWEEN %s AND %s
), entries AS (
    INSERT INTO journal_entries (source_kind, source_id, step, created_at)
    SELECT 'payment', id, 'succeeded', updated_at FROM paid RETURNING id, source_id
)
INSERT INTO postings (entry_id, account, amount_minor, currency)
SELECT e.id, leg.account, leg.amount_minor, p.currency
FROM entries e JOIN paid p ON p.id = e.source_id CROSS JOIN LATERAL (VALUES
    ('clearing:stripe', p.amount_minor), ('revenue', -p.amount_minor)) AS leg(account, amount_minor)
"""


def _ledger(plan: list[Any]) -> Iterator[tuple[Any, ...]]:
    for pid, purpose, status, at in plan:
        if purpose == "wallet_topup" and status == "succeeded":
            yield (_customer(pid), f"topup:{pid}", 1400, "topup", "payment", pid, "", 0, at)


def _calls(plan: list[Any]) -> Iterator[tuple[Any, ...]]:
    for pid, _, status, at in plan:
        outcome = "ok" if status != "unknown" else "timeout"
        yield ("stripe", "charge", "charge", pid, None, 1, at, 180.0, outcome, 200,
               "/v1/payment_intents", f"req_{pid}", None)  # fmt: skip


def _emails(plan: list[Any]) -> Iterator[tuple[Any, ...]]:
    for pid, _, status, at in plan:
        kind = "receipt" if status == "succeeded" else "payment_failed"
        yield (kind, pid, f"history-{_customer(pid)}@example.com", "sent", 1, at, at, at)


ORDER_COLUMNS = ("id", "customer_id", "status", "total_minor", "currency", "created_at",
                 "updated_at", "paid_at")  # fmt: skip
PAYMENT_COLUMNS = ("id", "idempotency_key", "customer_id", "purpose", "order_id", "wallet_id",
    "provider", "amount_minor", "currency", "status", "provider_payment_id", "payment_method",
    "first_sent_at", "last_sent_at", "send_count", "next_reconcile_at", "reconcile_attempts",
    "is_effect_applied", "effect_reversals", "created_at", "updated_at")  # fmt: skip
TRANSITION_COLUMNS = ("payment_id", "from_status", "to_status", "source", "reason", "created_at")
WEBHOOK_COLUMNS = ("provider", "event_id", "event_type", "state", "payment_id", "note",
    "payload", "event_created_at", "received_at", "processed_at")  # fmt: skip
LEDGER_COLUMNS = ("wallet_id", "operation_id", "amount_minor", "kind", "source_kind",
                  "source_id", "memo", "balance_after_minor", "created_at")  # fmt: skip
CALL_COLUMNS = ("provider", "operation", "subject_kind", "subject_id", "idempotency_key",
    "attempt", "started_at", "duration_ms", "outcome", "http_status", "endpoint", "request_id",
    "error")  # fmt: skip
OUTBOX_COLUMNS = ("kind", "subject_id", "recipient", "status", "attempts", "sent_at",
                  "created_at", "updated_at")  # fmt: skip


def _copy(table: str, columns: tuple[str, ...]) -> str:
    return f"COPY {table} ({', '.join(columns)}) FROM STDIN"


def _copy_rows(
    conn: psycopg.Connection[Any], table: str, columns: tuple[str, ...], rows: Any
) -> None:
    with conn.cursor().copy(_copy(table, columns)) as copy:
        for row in rows:
            copy.write_row(row)


def utc_now() -> datetime:
    return datetime.now(UTC)
