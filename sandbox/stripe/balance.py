"""Stripe's balance: a balance transaction for every movement of the account's money
(a charge less its fee, a refund, a refund that failed and came back, a dispute's
withdrawal with its fee and its reinstatement, a payout and a payout that failed), each
`pending` until its `available_on`; payouts of the available balance to the bank
(sandbox/stripe/balance_api.py reads them). The fee schedule is Stripe's published one
for EEA cards (1.5% + 0.25), configurable; a refund does not give the fee back."""

from __future__ import annotations

import sqlite3
import time
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from sandbox.context import settings, store
from sandbox.events import create_event
from sandbox.store import Store, dumps
from sandbox.stripe.objects import new_id

BANK_ACCOUNT = "ba_sandbox_bank"


def card_fee(amount: int) -> int:
    """The fee of a card charge of `amount` minor units, rounded half up to the unit."""
    config = settings()
    share = Decimal(amount) * Decimal(config.fee_percent) / 100
    return int(share.quantize(Decimal(1), rounding=ROUND_HALF_UP)) + config.fee_fixed


def record(
    conn: sqlite3.Connection,
    kind: str,
    source: str,
    amount: int,
    currency: str,
    *,
    fee: int = 0,
    fee_description: str = "Stripe processing fees",
    category: str | None = None,
    description: str | None = None,
    available_after_s: float | None = None,
) -> dict[str, Any]:
    """Keep a balance transaction; the object as Stripe returns it."""
    now = int(time.time())
    delay = settings().available_after_s if available_after_s is None else available_after_s
    txn = {
        "id": new_id("txn"),
        "object": "balance_transaction",
        "amount": amount,
        "available_on": now + int(delay),
        "balance_type": "payments",
        "created": now,
        "currency": currency.lower(),
        "description": description,
        "exchange_rate": None,
        "fee": fee,
        "fee_details": [
            {
                "amount": fee,
                "application": None,
                "currency": currency.lower(),
                "description": fee_description,
                "type": "stripe_fee",
            }
        ]
        if fee
        else [],
        "net": amount - fee,
        "reporting_category": category or kind,
        "source": source,
        "status": "pending",
        "type": kind,
    }
    conn.execute(
        "INSERT INTO balance_transactions (id, created, available_on, type, source, currency, "
        "net, payout, body) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)",
        (
            txn["id"],
            now,
            txn["available_on"],
            kind,
            source,
            txn["currency"],
            txn["net"],
            dumps(txn),
        ),
    )
    return txn


def run_payouts(db: Store, *, is_failing: bool = False) -> list[dict[str, Any]]:
    """Pay the available balance of each currency out to the bank (Stripe's automatic
    payout): a payout of the net of every available transaction not yet paid out, its
    own `payout` transaction, `payout.created` and `payout.paid`. A failing payout
    (`is_failing`) is `failed` with `account_closed`, and its money comes back in a
    `payout_failure` transaction, which the next payout pays out. Returns the payouts."""
    made = []
    with db.transaction() as conn:
        now = int(time.time())
        sums = conn.execute(
            "SELECT currency, SUM(net) AS net FROM balance_transactions WHERE payout IS NULL "
            "AND available_on <= ? AND type != 'payout' "
            "GROUP BY currency HAVING SUM(net) > 0",
            (now,),
        ).fetchall()
        for row in sums:
            made.append(_pay_out(conn, row["currency"], int(row["net"]), now, is_failing))
    return made


def available(conn: sqlite3.Connection, currency: str, now: float) -> int:
    """The balance of a currency that may be paid out now."""
    row = conn.execute(
        "SELECT COALESCE(SUM(net), 0) AS net FROM balance_transactions "
        "WHERE currency = ? AND available_on <= ?",
        (currency, now),
    ).fetchone()
    return int(row["net"])


def manual_payout(conn: sqlite3.Connection, amount: int, currency: str) -> dict[str, Any]:
    """A payout the account asked for (`POST /v1/payouts`): `amount` of the available
    balance, linked to no transaction (Stripe lists a manual payout's contents by no
    `?payout=`). The caller checked that the balance has it."""
    return _pay_out(conn, currency, amount, int(time.time()), False, is_automatic=False)


def _pay_out(
    conn: sqlite3.Connection,
    currency: str,
    amount: int,
    now: int,
    is_failing: bool,
    *,
    is_automatic: bool = True,
) -> dict[str, Any]:
    payout_id = new_id("po")
    txn = record(conn, "payout", payout_id, -amount, currency, available_after_s=0)
    payout = {
        "id": payout_id,
        "object": "payout",
        "amount": amount,
        "application_fee": None,
        "application_fee_amount": None,
        "arrival_date": now,
        "automatic": is_automatic,
        "balance_transaction": txn["id"],
        "created": now,
        "currency": currency,
        "description": "STRIPE PAYOUT",
        "destination": BANK_ACCOUNT,
        "failure_balance_transaction": None,
        "failure_code": None,
        "failure_message": None,
        "livemode": False,
        "metadata": {},
        "method": "standard",
        "original_payout": None,
        "payout_method": None,
        "reconciliation_status": "completed",
        "reversed_by": None,
        "source_type": "card",
        "statement_descriptor": None,
        "status": "paid",
        "trace_id": {"status": "supported", "value": None},
        "type": "bank_account",
    }
    if is_automatic:  # what it paid out: every available transaction not paid out yet
        conn.execute(
            "UPDATE balance_transactions SET payout = ? WHERE payout IS NULL "
            "AND available_on <= ? AND currency = ? AND (type != 'payout' OR id = ?)",
            (payout_id, now, currency, txn["id"]),
        )
    create_event(store(), conn, "stripe", "payout.created", {**payout, "status": "pending"})
    if is_failing:
        back = record(conn, "payout_failure", payout_id, amount, currency, available_after_s=0)
        payout.update(
            status="failed",
            failure_balance_transaction=back["id"],
            failure_code="account_closed",
            failure_message="The bank account has been closed.",
        )
    conn.execute(
        "INSERT INTO payouts (id, created, arrival_date, status, currency, amount, body) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (payout_id, now, now, payout["status"], currency, amount, dumps(payout)),
    )
    create_event(store(), conn, "stripe", f"payout.{payout['status']}", payout)
    return payout


class AutomaticPayouts:
    """The deliverer's tick: a payout run every `interval_s` (never when 0), as Stripe's
    daily automatic payouts, seconds apart in drills. Called in the app's context."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.last_run = time.time()

    def __call__(self, db: Store) -> int:
        if not self.interval_s or time.time() - self.last_run < self.interval_s:
            return 0
        self.last_run = time.time()
        return len(run_payouts(db))
