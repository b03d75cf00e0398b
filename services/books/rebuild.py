"""The rebuild check: what the tables say, recomputed from the journal's postings alone.

- Every wallet's balance is what its account (`wallet:<id>`) owes the customer: minus
  the sum of its postings, all in the wallet's currency.
- Every order's amounts: paid (revenue credited by its card payments' successes and its
  wallet payment, less their reversals), refunded (the refunds account, by its refunds)
  and disputed (the disputes account, by the chargebacks of its payments) equal what its
  payments, refunds and disputes record as applied; and it is paid (or refunded, or
  disputed) exactly when its postings say it was paid.

Each check is one statement over the whole tables (indexed by account and by source),
read-only. `flask books rebuild-check` prints what they find.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Row, text

from extensions import db
from models import PAID_LIKE, OrderStatus
from services.platform.locales import money_text

_WALLETS = text("""
SELECT w.id, w.currency, w.balance_minor,
    coalesce(-sum(p.amount_minor) FILTER (WHERE p.currency = w.currency), 0) AS owed,
    count(p.id) FILTER (WHERE p.currency <> w.currency) AS foreign_postings
FROM wallets w LEFT JOIN postings p ON p.account = 'wallet:' || w.id
GROUP BY w.id ORDER BY w.id
""")

# The movements of each order, as journal sources: itself (a wallet payment), its
# payments, its refunds and its payments' disputes.
_ORDERS = text("""
WITH sources AS (
    SELECT id AS order_id, 'order' AS kind, id AS source_id FROM orders
    UNION ALL SELECT order_id, 'payment', id FROM payments WHERE order_id IS NOT NULL
    UNION ALL SELECT order_id, 'refund', id FROM refunds WHERE order_id IS NOT NULL
    UNION ALL SELECT p.order_id, 'dispute', d.id
        FROM disputes d JOIN payments p ON p.id = d.payment_id WHERE p.order_id IS NOT NULL
), booked AS (
    SELECT s.order_id,
        -sum(po.amount_minor) FILTER (WHERE po.account = 'revenue') AS paid,
        sum(po.amount_minor) FILTER (WHERE po.account = 'refunds') AS refunded,
        sum(po.amount_minor) FILTER (WHERE po.account = 'disputes') AS disputed
    FROM sources s
    JOIN journal_entries e ON e.source_kind = s.kind AND e.source_id = s.source_id
    JOIN postings po ON po.entry_id = e.id
    GROUP BY s.order_id
), told AS (
    SELECT o.id AS order_id, o.status, o.currency,
        coalesce((SELECT sum(p.amount_minor) FROM payments p
            WHERE p.order_id = o.id AND p.is_effect_applied), 0)
        - coalesce((SELECT sum(l.amount_minor) FROM ledger_entries l
            WHERE l.source_kind = 'order' AND l.source_id = o.id AND l.kind = 'order'), 0)
            AS paid,
        coalesce((SELECT sum(r.amount_minor) FROM refunds r
            WHERE r.order_id = o.id AND r.is_effect_applied), 0) AS refunded,
        coalesce((SELECT sum(d.withdrawn_minor) FROM disputes d JOIN payments p
            ON p.id = d.payment_id WHERE p.order_id = o.id AND d.is_effect_applied), 0)
            AS disputed
    FROM orders o
)
SELECT told.order_id, told.status, told.currency,
    told.paid, coalesce(booked.paid, 0) AS booked_paid,
    told.refunded, coalesce(booked.refunded, 0) AS booked_refunded,
    told.disputed, coalesce(booked.disputed, 0) AS booked_disputed
FROM told LEFT JOIN booked USING (order_id)
ORDER BY told.order_id
""")


@dataclass
class Rebuilt:
    wallets: int = 0
    orders: int = 0
    mismatches: list[str] = field(default_factory=list)


def check() -> Rebuilt:
    """Every wallet and every order, recomputed from postings and compared."""
    result = Rebuilt()
    result.wallets, wallet_mismatches = wallets()
    result.orders, order_mismatches = orders()
    result.mismatches = wallet_mismatches + order_mismatches
    return result


def wallets() -> tuple[int, list[str]]:
    """How many wallets, and each whose balance is not what its account owes."""
    found, checked = [], 0
    for wallet_id, currency, balance, owed, foreign in db.session.execute(_WALLETS):
        checked += 1
        if balance != owed:
            found.append(
                f"wallet {wallet_id}: balance {money_text(balance, currency)}, its account "
                f"owes {money_text(owed, currency)}"
            )
        if foreign:
            found.append(
                f"wallet {wallet_id}: {foreign} posting(s) in a currency other than {currency}"
            )
    return checked, found


def orders() -> tuple[int, list[str]]:
    """How many orders, and each whose amounts the books tell otherwise."""
    found, checked = [], 0
    for row in db.session.execute(_ORDERS):
        checked += 1
        found.extend(_order_mismatches(row))
    return checked, found


def _order_mismatches(row: Row[Any]) -> list[str]:
    found = []
    for name in ("paid", "refunded", "disputed"):
        told, booked = getattr(row, name), getattr(row, f"booked_{name}")
        if told != booked:
            found.append(
                f"order {row.order_id}: {name} {money_text(told, row.currency)} by its "
                f"movements, {money_text(booked, row.currency)} by the books"
            )
    if (OrderStatus(row.status) in PAID_LIKE) != (row.booked_paid > 0):
        found.append(
            f"order {row.order_id} is {row.status}, the books say it was "
            f"{'paid' if row.booked_paid > 0 else 'never paid'}"
        )
    return found
