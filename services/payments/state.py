"""The one state machine of payments: every status change goes through `move`."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import event, func, select
from sqlalchemy.orm import Session

from extensions import db
from models import (
    ALLOWED_TRANSITIONS,
    EmailKind,
    LedgerKind,
    Order,
    OrderStatus,
    Payment,
    PaymentPurpose,
    PaymentStatus,
    PaymentTransition,
    Refund,
    TransitionSource,
)
from models.types import utcnow
from services.notifications.outbox import queue_email
from services.platform.locales import money_text
from services.wallet import ledger

log = logging.getLogger(__name__)

RESOLVED = (PaymentStatus.SUCCEEDED, PaymentStatus.FAILED)
CREATION_REASON = "payment created"


def log_context(payment: Payment) -> dict[str, object]:
    """The fields every log line about a payment carries (see logs.py)."""
    return {
        "payment_id": payment.id,
        "idempotency_key": str(payment.idempotency_key),
        "provider": payment.provider,
    }


def lock_order_of(payment_id: int, order_id: int | None = None) -> None:
    """Lock the order of an order payment (if any) until the transaction ends.

    The one lock order of the system is order, then payment, then wallet. A checkout
    holds its order while it inserts a payment (which may wait on a payment row being
    updated), so a job that updated a payment and only then asked for the order
    deadlocked with it. Every transaction that may touch both takes the order first.
    """
    if order_id is None:  # not known to the caller: look it up (it never changes)
        order_id = db.session.scalar(select(Payment.order_id).where(Payment.id == payment_id))
    if order_id is not None:
        db.session.execute(select(Order.id).where(Order.id == order_id).with_for_update())


def lock_payment(payment_id: int) -> Payment | None:
    """The payment row (its order first, see lock_order_of), locked until the transaction ends."""
    lock_order_of(payment_id)
    return lock_payment_row(payment_id)


def lock_found_payment(payment_id: int, order_id: int | None) -> Payment | None:
    """lock_payment for a caller that has read the payment's order_id already (a top-up
    has none): the same lock order, one query less."""
    if order_id is not None:
        lock_order_of(payment_id, order_id)
    return lock_payment_row(payment_id)


def lock_payment_row(payment_id: int) -> Payment | None:
    """The payment row, locked, for a caller that holds its order's lock already."""
    return db.session.scalar(
        select(Payment)
        .where(Payment.id == payment_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


_PENDING_LOGS = "payment_state.pending_logs"


def log_after_commit(message: str, *args: object, extra: dict[str, Any] | None = None) -> None:
    """Log a line about the session's transaction once it has committed (never before:
    a line for a change that is then rolled back would be a lie in the audit trail)."""
    db.session.info.setdefault(_PENDING_LOGS, []).append((message, args, extra))


@event.listens_for(Session, "after_commit")
def _emit_pending_logs(session: Session) -> None:
    for message, args, extra in session.info.pop(_PENDING_LOGS, []):
        log.info(message, *args, extra=extra)


@event.listens_for(Session, "after_rollback")
def _drop_pending_logs(session: Session) -> None:
    session.info.pop(_PENDING_LOGS, None)


def record_creation(payment: Payment, source: TransitionSource) -> None:
    db.session.add(
        PaymentTransition(
            payment_id=payment.id,
            from_status=None,
            to_status=PaymentStatus.PENDING,
            source=source,
            reason=CREATION_REASON,
        )
    )


def move(
    payment: Payment,
    to: PaymentStatus,
    *,
    source: TransitionSource,
    reason: str = "",
    actor: str | None = None,
) -> bool:
    """Move a locked payment to `to` and record why, in the caller's transaction.

    Returns True when the status changed. Terminal states never regress; a
    conflicting terminal report (failed after succeeded) sets needs_review with
    both facts; only an admin takes a payment out of needs_review. Succeeding
    pays the order or credits the wallet in the same transaction.
    """
    current = payment.status
    if to == current:
        return False
    if current == PaymentStatus.NEEDS_REVIEW and source != TransitionSource.ADMIN:
        # Keep the new fact for the person deciding; the status stays.
        _record(payment, current, current, source, f"reported {to.value}: {reason}", actor)
        return False
    if current in RESOLVED and to in RESOLVED:
        reason = (
            f"conflict: payment was {current.value}, {source.value} reports {to.value}: {reason}"
        )
        to = PaymentStatus.NEEDS_REVIEW
    elif to not in ALLOWED_TRANSITIONS[current]:
        log.info(
            "payment %s: ignored %s -> %s from %s (%s)",
            payment.id,
            current.value,
            to.value,
            source.value,
            reason,
        )
        return False
    payment.status = to
    _record(payment, current, to, source, reason, actor)
    log_after_commit(
        "payment %s (key %s, provider %s): %s -> %s by %s: %s",
        payment.id,
        payment.idempotency_key,
        payment.provider,
        current.value,
        to.value,
        source.value,
        reason,
        extra=log_context(payment),
    )
    if to == PaymentStatus.SUCCEEDED:
        _apply_success(payment, source)
    _queue_email(payment)
    return True


EMAILS = {
    PaymentStatus.SUCCEEDED: EmailKind.RECEIPT,
    PaymentStatus.FAILED: EmailKind.PAYMENT_FAILED,
    PaymentStatus.NEEDS_REVIEW: EmailKind.REVIEW_ALERT,
}


def _queue_email(payment: Payment) -> None:
    """The email the payment's new state sends, written with it (the outbox; once per
    payment and kind). A success that went on to review sends the alert, no receipt."""
    kind = EMAILS.get(payment.status)
    if kind is None:
        return
    to_customer = None if kind == EmailKind.REVIEW_ALERT else payment.customer_id
    queue_email(kind, payment.id, customer_id=to_customer)


def note(
    payment: Payment, *, source: TransitionSource, reason: str, actor: str | None = None
) -> None:
    """Record a fact about a payment that does not change its status (e.g. a reroute)."""
    _record(payment, payment.status, payment.status, source, reason, actor)


def _record(
    payment: Payment,
    from_status: PaymentStatus,
    to: PaymentStatus,
    source: TransitionSource,
    reason: str,
    actor: str | None,
) -> None:
    db.session.add(
        PaymentTransition(
            payment_id=payment.id,
            from_status=from_status,
            to_status=to,
            source=source,
            reason=reason[:500],
            actor=actor,
        )
    )


def _apply_success(payment: Payment, source: TransitionSource) -> None:
    """Pay the order or credit the wallet, once for as long as the payment stands."""
    if payment.is_effect_applied:
        return  # e.g. an admin confirms a success that a conflict had sent to review
    if payment.purpose == PaymentPurpose.WALLET_TOPUP and payment.wallet_id is not None:
        # Derived operation id: whoever gets here first credits, everyone else replays.
        # After a reversal a new success is a new movement, so it gets its own id.
        generation = payment.effect_reversals
        ledger.apply_movement(
            payment.wallet_id,
            payment.amount_minor,
            payment.currency,
            operation_id=f"topup:{payment.id}" + (f":{generation + 1}" if generation else ""),
            kind=LedgerKind.TOPUP,
            reference=f"payment {payment.id}",
        )
        payment.is_effect_applied = True
        return
    order = _locked_order(payment)
    if order is None:
        return
    if order.status == OrderStatus.OPEN:
        order.status = OrderStatus.PAID
        order.paid_at = utcnow()
        payment.is_effect_applied = True
        return
    # Money was taken for an order that is already paid: a person must
    # refund one of them. Through the state machine like every change (succeeded ->
    # needs_review is allowed; it has no effect to apply).
    move(
        payment,
        PaymentStatus.NEEDS_REVIEW,
        source=source,
        reason=f"order {order.id} was already {order.status.value}",
    )


def reverse_effect(payment: Payment) -> str | None:
    """Undo what the payment's success did, in the caller's transaction; say what was undone.

    The wallet credit is taken back through its own ledger entry (UNIQUE operation
    id); the order is open again. Raises ledger.InsufficientFundsError (nothing
    written by it) when the credit was already spent.
    """
    if not payment.is_effect_applied:
        return None
    generation = payment.effect_reversals + 1
    undone: str | None = None
    if payment.purpose == PaymentPurpose.WALLET_TOPUP and payment.wallet_id is not None:
        # Only what is still there: a refund of the top-up already took its part from
        # the wallet (refunds/state.take_from_wallet), and must not be taken twice.
        refunded = db.session.scalar(
            select(func.coalesce(func.sum(Refund.amount_minor), 0)).where(
                Refund.payment_id == payment.id, Refund.is_effect_applied.is_(True)
            )
        )
        left = payment.amount_minor - int(refunded or 0)
        if left > 0:
            ledger.apply_movement(
                payment.wallet_id,
                -left,
                payment.currency,
                operation_id=f"reversal:{payment.id}:{generation}",
                kind=LedgerKind.REVERSAL,
                reference=f"payment {payment.id}",
            )
        undone = f"wallet credit of {money_text(left, payment.currency)} taken back" + (
            f" (the rest, {money_text(payment.amount_minor - left, payment.currency)}, "
            "was refunded already)"
            if left < payment.amount_minor
            else ""
        )
    else:
        order = _locked_order(payment)
        if order is not None and order.status == OrderStatus.PAID:
            order.status = OrderStatus.OPEN
            order.paid_at = None
            undone = f"order {order.id} open again"
    payment.is_effect_applied = False
    payment.effect_reversals = generation
    return undone


def _locked_order(payment: Payment) -> Order | None:
    return db.session.scalar(
        select(Order)
        .where(Order.id == payment.order_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
