"""The one state machine of payments: every status change goes through `move`."""

from __future__ import annotations

import logging

from sqlalchemy import select

from extensions import db
from models import (
    ALLOWED_TRANSITIONS,
    Order,
    OrderStatus,
    Payment,
    PaymentPurpose,
    PaymentStatus,
    PaymentTransition,
    TransitionSource,
)
from models.types import utcnow
from services import wallet

log = logging.getLogger(__name__)

RESOLVED = (PaymentStatus.SUCCEEDED, PaymentStatus.FAILED)


def log_context(payment: Payment) -> dict[str, object]:
    """The fields every log line about a payment carries (see logs.py)."""
    return {
        "payment_id": payment.id,
        "idempotency_key": str(payment.idempotency_key),
        "provider": payment.provider,
    }


def lock_payment(payment_id: int) -> Payment | None:
    """The payment row, locked until the transaction ends (SELECT ... FOR UPDATE)."""
    return db.session.scalar(
        select(Payment)
        .where(Payment.id == payment_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


def record_creation(payment: Payment, source: TransitionSource) -> None:
    db.session.add(
        PaymentTransition(
            payment_id=payment.id,
            from_status=None,
            to_status=PaymentStatus.PENDING,
            source=source,
            reason="payment created",
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
    log.info(
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
    return True


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
    if payment.purpose == PaymentPurpose.WALLET_TOPUP and payment.wallet_id is not None:
        # Derived operation id: whoever gets here first credits, everyone else replays.
        wallet.apply_movement(
            payment.wallet_id,
            payment.amount_minor,
            payment.currency,
            operation_id=f"topup:{payment.id}",
            kind="topup",
            reference=f"payment {payment.id}",
        )
        return
    order = db.session.scalar(
        select(Order)
        .where(Order.id == payment.order_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if order is None:
        return
    if order.status == OrderStatus.OPEN:
        order.status = OrderStatus.PAID
        order.paid_at = utcnow()
        return
    # Money was taken for an order that is already paid (or cancelled): a person must
    # refund one of them.
    payment.status = PaymentStatus.NEEDS_REVIEW
    _record(
        payment,
        PaymentStatus.SUCCEEDED,
        PaymentStatus.NEEDS_REVIEW,
        source,
        f"order {order.id} was already {order.status.value}",
        None,
    )
