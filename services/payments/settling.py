"""The lean charge: a pending payment sent and, when the provider says it succeeded,
settled in two statements on PostgreSQL, each its own transaction (autocommit), with
no connection held while the provider answers:

  1. claim: the engine's, every kind's (services/movements/engine.py), with the
     charge's own columns (services/payments/kind.py);
  2. the provider call, through the gateway (breaker, timeout, metrics; no statement);
  3. settle: the success in one statement: the order locked and paid (or the top-up's
     wallet locked and credited with its ledger entry), the payment succeeded with its
     provider id and card, its transition, its receipt in the outbox and the call's row
     in the call log, in the lock order of services/movements/locks.py (order, payment,
     wallet).

The settle statement applies only the ORM path's happy case (services/payments/
state.move): a payment still pending under our lease and send, an answer that matches it,
an effect not applied yet, an order open with no refund or dispute applied, a top-up
whose wallet holds its currency and has no credit of it yet. Anything else writes
nothing but the call's row and returns no row: the caller takes the ORM path under the
row locks, which decides exactly as before (a refusal of the open circuit, a decline,
an unknown or 3-D Secure answer, a mismatch, a webhook that settled it first).
"""

from __future__ import annotations

from models import (
    EmailKind,
    LedgerKind,
    OrderStatus,
    OutboxStatus,
    PaymentPurpose,
    PaymentStatus,
    SourceKind,
    TransitionSource,
)
from models.types import utcnow
from providers.outcomes import Succeeded
from resilience.gateway import CallRecord
from services.movements import answers, machine
from services.movements.engine import Claimed
from services.notifications import outbox
from services.payments.state import TABLE
from services.platform import autocommit, call_log

# The payment's success, under the conditions of the ORM path's happy case.
_SUCCEEDED = """
    status = :succeeded, lease_expires_at = NULL, is_effect_applied = true, updated_at = :now,
    provider_payment_id = COALESCE(p.provider_payment_id, :provider_payment_id),
    card_brand = CASE WHEN :has_card THEN :card_brand ELSE p.card_brand END,
    card_last4 = CASE WHEN :has_card THEN :card_last4 ELSE p.card_last4 END
"""
_STILL_OURS = """
    p.id = :payment_id AND p.status = :pending AND p.lease_expires_at = :lease
    AND p.send_count = :send_count AND NOT p.is_effect_applied
    AND (p.provider_payment_id IS NULL OR p.provider_payment_id = :provider_payment_id)
"""
# Its transition, its receipt (the outbox: services/notifications/outbox.py) and the call.
_RECORDED = f"""
transition AS (
    INSERT INTO payment_transitions (payment_id, from_status, to_status, source, reason,
        created_at)
    SELECT id, :pending, :succeeded, :source, :reason, :now FROM paid
), receipt AS (
    INSERT INTO outbox (kind, subject_id, recipient, status, attempts, created_at, updated_at)
    SELECT :receipt, paid.id, c.email, :unsent, 0, :now, :now
    FROM paid JOIN customers c ON c.id = paid.customer_id
    ON CONFLICT (kind, subject_id) DO NOTHING
    RETURNING id
), call AS (
    {call_log.INSERT_SQL}
)
SELECT paid.id, (SELECT id FROM receipt) AS outbox_id FROM paid
"""
_SETTLE_ORDER = autocommit.plain(f"""
WITH ordered AS (
    SELECT o.id FROM orders o
    WHERE o.id = :order_id AND o.status = :open
        AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.order_id = o.id AND r.is_effect_applied)
        AND NOT EXISTS (SELECT 1 FROM disputes d JOIN payments dp ON dp.id = d.payment_id
            WHERE dp.order_id = o.id AND d.is_effect_applied)
    FOR UPDATE OF o
), paid AS (
    UPDATE payments AS p SET {_SUCCEEDED}
    FROM ordered WHERE p.order_id = ordered.id AND {_STILL_OURS}
    RETURNING p.id, p.customer_id
), order_paid AS (
    UPDATE orders SET status = :paid_order, paid_at = :now, updated_at = :now
    FROM paid WHERE orders.id = :order_id
), {_RECORDED}
""")
_SETTLE_TOPUP = autocommit.plain(f"""
WITH paid AS (
    UPDATE payments AS p SET {_SUCCEEDED}
    WHERE {_STILL_OURS} AND p.purpose = :topup AND p.effect_reversals = 0
        AND EXISTS (SELECT 1 FROM wallets w WHERE w.id = p.wallet_id AND w.currency = p.currency)
        AND NOT EXISTS (SELECT 1 FROM ledger_entries e WHERE e.operation_id = :operation_id)
    RETURNING p.id, p.customer_id, p.wallet_id, p.amount_minor
), wallet AS (
    SELECT w.id, w.balance_minor FROM wallets w JOIN paid ON w.id = paid.wallet_id
    FOR UPDATE OF w
), entry AS (
    INSERT INTO ledger_entries (wallet_id, operation_id, amount_minor, kind, source_kind,
        source_id, memo, balance_after_minor, created_at)
    SELECT wallet.id, :operation_id, paid.amount_minor, :credit, :source_payment, paid.id, '',
        wallet.balance_minor + paid.amount_minor, :now
    FROM paid JOIN wallet ON wallet.id = paid.wallet_id
    RETURNING wallet_id, balance_after_minor
), credited AS (
    UPDATE wallets SET balance_minor = entry.balance_after_minor, updated_at = :now
    FROM entry WHERE wallets.id = entry.wallet_id
), {_RECORDED}
""")

# The statement's parameters that never change.
_FIXED = {
    "pending": PaymentStatus.PENDING.value,
    "succeeded": PaymentStatus.SUCCEEDED.value,
    "open": OrderStatus.OPEN.value,
    "paid_order": OrderStatus.PAID.value,
    "topup": PaymentPurpose.WALLET_TOPUP.value,
    "credit": LedgerKind.TOPUP.value,
    "source_payment": SourceKind.PAYMENT.value,
    "source": TransitionSource.CHARGE.value,
    "receipt": EmailKind.RECEIPT.value,
    "unsent": OutboxStatus.PENDING.value,
}


def settle(claimed: Claimed, outcome: Succeeded, calls: list[CallRecord]) -> bool:
    """Apply the success in one statement, writing the call's row with it; False when
    this is not the happy case (nothing written but the call's row): take the ORM path."""
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
    is_topup = row.purpose == PaymentPurpose.WALLET_TOPUP.value
    if len(calls) != 1 or (row.order_id is None and not is_topup):
        call_log.write_all(calls)
        return False
    reason = f"provider payment {outcome.provider_payment_id}"
    params: dict[str, object] = {
        **_FIXED,
        "payment_id": row.id,
        "order_id": row.order_id,
        "lease": claimed.lease,
        "send_count": row.send_count,
        "provider_payment_id": outcome.provider_payment_id,
        "has_card": outcome.card is not None,
        "card_brand": outcome.card.brand if outcome.card else None,
        "card_last4": outcome.card.last4 if outcome.card else None,
        "reason": reason[:500],
        "operation_id": f"topup:{row.id}",
        "now": utcnow(),
        **call_log.params(calls[0]),
    }
    try:
        settled = autocommit.first_row(_SETTLE_TOPUP if is_topup else _SETTLE_ORDER, params)
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
