"""A charge's success, in one statement: the only implementation of it. The order
locked and paid (or the top-up's wallet locked and credited with its ledger entry), the
payment succeeded with its provider id and card, its transition and its receipt in the
outbox, in the lock order of services/movements/locks.py (order, payment, wallet).

It runs two ways:

  - `settle`: the lean charge. A send's success, in its own transaction (autocommit)
    with the call's row, right after the engine's claim (services/movements/engine.py):
    two statements for a charge, no connection held while the provider answers.
  - `succeed`: every other success (a lookup, a webhook, an admin, a send that took the
    ORM path), inside the caller's transaction on the session's connection, for a
    payment it has locked; `state.move` calls it when the machine's rules allow the
    step to succeeded.

Its conditions are the success's own: the payment still where the caller saw it (status,
lease, send count), its effect not applied, an answer that matches it, an order open
with no refund or dispute applied, a top-up whose wallet holds its currency. Anything
else writes nothing (but a send's call row) and returns False: the lean charge then takes
the ORM path under the row locks; `succeed`'s caller takes the step without an effect
and sends the payment to review (an order paid by another payment first).
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy.orm.attributes import set_committed_value

from extensions import db
from models import (
    Account,
    EmailKind,
    LedgerKind,
    Order,
    OrderStatus,
    OutboxStatus,
    Payment,
    PaymentPurpose,
    PaymentStatus,
    SourceKind,
    TransitionSource,
    Wallet,
)
from models.types import utcnow
from providers.outcomes import Succeeded
from resilience.gateway import CallRecord
from services.books import journal
from services.movements import answers, machine
from services.movements.engine import Claimed
from services.notifications import outbox
from services.payments.table import TABLE
from services.platform import autocommit, call_log

# The payment's success, under the conditions of the success.
_SUCCEEDED = """
    status = :succeeded, lease_expires_at = NULL, is_effect_applied = true, updated_at = :now,
    provider_payment_id = COALESCE(p.provider_payment_id, :provider_payment_id),
    card_brand = CASE WHEN :has_card THEN :card_brand ELSE p.card_brand END,
    card_last4 = CASE WHEN :has_card THEN :card_last4 ELSE p.card_last4 END
"""
_STILL_WHERE_SEEN = """
    p.id = :payment_id AND p.status = :was AND p.lease_expires_at IS NOT DISTINCT FROM :lease
    AND p.send_count = :send_count AND NOT p.is_effect_applied
    AND (p.provider_payment_id IS NULL OR p.provider_payment_id = :provider_payment_id)
"""
# A top-up's credit: one operation id per success that stands (after a reversal, a new
# success is a new movement: "topup:<id>:<generation>").
_TOPUP_OPERATION = """('topup:' || p.id || CASE WHEN p.effect_reversals > 0
    THEN ':' || (p.effect_reversals + 1) ELSE '' END)"""
# Its journal entry (services/books/journal.py: the provider's clearing account debited,
# revenue or the wallet's account credited, that leg naming the wallet's ledger entry),
# its transition, its receipt (the outbox: services/notifications/outbox.py), the call.
_RECORDED = """
booked AS (
    INSERT INTO journal_entries (source_kind, source_id, step, created_at)
    SELECT :source_payment, paid.id, paid.step, :now FROM paid
    ON CONFLICT DO NOTHING
    RETURNING id
), posted AS (
    INSERT INTO postings (entry_id, account, amount_minor, currency, ledger_entry_id)
    SELECT booked.id, leg.account, leg.amount_minor, paid.currency, leg.ledger_entry_id
    FROM booked CROSS JOIN paid CROSS JOIN LATERAL (VALUES
        (:clearing, paid.amount_minor, NULL::bigint),
        (paid.credit_account, -paid.amount_minor, (SELECT id FROM entry)))
        AS leg(account, amount_minor, ledger_entry_id)
), transition AS (
    INSERT INTO payment_transitions (payment_id, from_status, to_status, source, reason,
        actor, created_at)
    SELECT id, :was, :succeeded, :source, :reason, :actor, :now FROM paid
), receipt AS (
    INSERT INTO outbox (kind, subject_id, recipient, status, attempts, created_at, updated_at)
    SELECT :receipt, paid.id, c.email, :unsent, 0, :now, :now
    FROM paid JOIN customers c ON c.id = paid.customer_id
    ON CONFLICT (kind, subject_id) DO NOTHING
    RETURNING id
){call}
SELECT paid.id, (SELECT id FROM receipt) AS outbox_id FROM paid
"""
_CALL = f""", call AS (
    {call_log.INSERT_SQL}
)"""
_ORDER = f"""
WITH ordered AS (
    SELECT o.id FROM orders o
    WHERE o.id = :order_id AND o.status = :open
        AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.order_id = o.id AND r.is_effect_applied)
        AND NOT EXISTS (SELECT 1 FROM disputes d JOIN payments dp ON dp.id = d.payment_id
            WHERE dp.order_id = o.id AND d.is_effect_applied)
    FOR UPDATE OF o
), paid AS (
    UPDATE payments AS p SET {_SUCCEEDED}
    FROM ordered WHERE p.order_id = ordered.id AND {_STILL_WHERE_SEEN}
    RETURNING p.id, p.customer_id, p.amount_minor, p.currency,
        {journal.SUCCESS_STEP} AS step, :revenue AS credit_account
), order_paid AS (
    UPDATE orders SET status = :paid_order, paid_at = :now, updated_at = :now
    FROM paid WHERE orders.id = :order_id
), entry AS (
    SELECT NULL::bigint AS id  -- no wallet entry: revenue is credited
),"""
_TOPUP = f"""
WITH paid AS (
    UPDATE payments AS p SET {_SUCCEEDED}
    WHERE {_STILL_WHERE_SEEN} AND p.purpose = :topup
        AND EXISTS (SELECT 1 FROM wallets w WHERE w.id = p.wallet_id AND w.currency = p.currency)
        AND NOT EXISTS (SELECT 1 FROM ledger_entries e WHERE e.operation_id = {_TOPUP_OPERATION})
    RETURNING p.id, p.customer_id, p.wallet_id, p.amount_minor, p.currency,
        {_TOPUP_OPERATION} AS operation_id, {journal.SUCCESS_STEP} AS step,
        'wallet:' || p.wallet_id AS credit_account
), wallet AS (
    SELECT w.id, w.balance_minor FROM wallets w JOIN paid ON w.id = paid.wallet_id
    FOR UPDATE OF w
), entry AS (
    INSERT INTO ledger_entries (wallet_id, operation_id, amount_minor, kind, source_kind,
        source_id, memo, balance_after_minor, created_at)
    SELECT wallet.id, paid.operation_id, paid.amount_minor, :credit, :source_payment, paid.id,
        '', wallet.balance_minor + paid.amount_minor, :now
    FROM paid JOIN wallet ON wallet.id = paid.wallet_id
    RETURNING id, wallet_id, balance_after_minor
), credited AS (
    UPDATE wallets SET balance_minor = entry.balance_after_minor, updated_at = :now
    FROM entry WHERE wallets.id = entry.wallet_id
),"""

# The statement's parameters that never change.
_FIXED = {
    "succeeded": PaymentStatus.SUCCEEDED.value,
    "open": OrderStatus.OPEN.value,
    "paid_order": OrderStatus.PAID.value,
    "topup": PaymentPurpose.WALLET_TOPUP.value,
    "credit": LedgerKind.TOPUP.value,
    "source_payment": SourceKind.PAYMENT.value,
    "revenue": Account.REVENUE,
    "receipt": EmailKind.RECEIPT.value,
    "unsent": OutboxStatus.PENDING.value,
}


@functools.cache
def _statement(is_topup: bool, with_call: bool) -> autocommit.Plain:
    effect = _TOPUP if is_topup else _ORDER
    return autocommit.plain(effect + _RECORDED.format(call=_CALL if with_call else ""))


def _params(row: Any, was: PaymentStatus, lease: Any, source: TransitionSource) -> dict[str, Any]:
    """The statement's parameters for a payment (a claim's record or an ORM row)."""
    return {
        **_FIXED,
        "payment_id": row.id,
        "order_id": row.order_id,
        "was": was.value,
        "lease": lease,
        "send_count": row.send_count,
        "source": source.value,
        "clearing": Account.clearing(row.provider),
        "actor": None,
        "has_card": False,
        "card_brand": None,
        "card_last4": None,
        "now": utcnow(),
    }


def _has_effect(row: Any) -> bool:
    """Whether a success of the payment pays an order or credits a wallet."""
    return row.order_id is not None or row.purpose == PaymentPurpose.WALLET_TOPUP


def settle(claimed: Claimed, outcome: Succeeded, calls: list[CallRecord]) -> bool:
    """A send's success in one statement, writing the call's row with it; False when the
    success's conditions do not hold (nothing written but the call's row): take the ORM
    path."""
    row = claimed.row
    if answers.mismatch(
        "payment",
        row,
        row.provider_payment_id,
        outcome.provider_payment_id,
        outcome.report,
        is_success=True,
    ):
        call_log.write_all(calls)
        return False  # the ORM path sets it aside, with the reason
    if len(calls) != 1 or not _has_effect(row):
        call_log.write_all(calls)
        return False
    reason = f"provider payment {outcome.provider_payment_id}"[:500]
    params = _params(row, PaymentStatus.PENDING, claimed.lease, TransitionSource.CHARGE)
    params.update(
        provider_payment_id=outcome.provider_payment_id,
        has_card=outcome.card is not None,
        card_brand=outcome.card.brand if outcome.card else None,
        card_last4=outcome.card.last4 if outcome.card else None,
        reason=reason,
        **call_log.params(calls[0]),
    )
    is_topup = row.purpose == PaymentPurpose.WALLET_TOPUP.value
    try:
        settled = autocommit.first_row(_statement(is_topup, with_call=True), params)
    except autocommit.ConnectionLost:
        call_log.write_all(calls)  # perhaps twice: a log line, never money
        return False
    if settled is None:
        return False
    machine.log_step(
        TABLE, row, PaymentStatus.PENDING, PaymentStatus.SUCCEEDED, TransitionSource.CHARGE, reason
    )
    if settled.outbox_id is not None:
        outbox.wake_sender()
    return True


def succeed(
    payment: Payment,
    taken: machine.Step[PaymentStatus],
    source: TransitionSource,
    actor: str | None,
) -> bool:
    """Take the step to succeeded of a locked payment with its effect, in the caller's
    transaction; False (nothing written) when the success's conditions do not hold."""
    if payment.is_effect_applied or not _has_effect(payment):
        return False
    db.session.flush()  # the caller's changes (its provider id, card) first
    params = _params(payment, taken.was, payment.lease_expires_at, source)
    params.update(
        provider_payment_id=payment.provider_payment_id, reason=taken.reason[:500], actor=actor
    )
    statement = _statement(payment.purpose == PaymentPurpose.WALLET_TOPUP, with_call=False)
    settled = db.session.connection().exec_driver_sql(statement.sql, params).first()
    if settled is None:
        return False
    # What the statement wrote, on the objects this session holds.
    for key, value in (
        ("status", PaymentStatus.SUCCEEDED),
        ("lease_expires_at", None),
        ("is_effect_applied", True),
        ("updated_at", params["now"]),
    ):
        set_committed_value(payment, key, value)
    for model, row_id in ((Order, payment.order_id), (Wallet, payment.wallet_id)):
        cached = row_id and db.session.identity_map.get(db.session.identity_key(model, row_id))
        if cached:
            db.session.expire(cached)
    machine.log_step(
        TABLE,
        payment,
        taken.was,
        PaymentStatus.SUCCEEDED,
        source,
        taken.reason,
        is_committed=False,
    )
    if settled.outbox_id is not None:
        outbox.wake_after_commit(settled.outbox_id)
    return True
