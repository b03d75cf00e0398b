"""Asking for a refund: recorded (pending, UNIQUE idempotency key) under a lock of what
it refunds, never beyond what was charged, committed before any provider call.

Who: admins (the dashboard's payment page) and operators (`flask payments refund`).
A payment's refund goes to its provider (a job on the provider's queue); an order paid
from the wallet is refunded to the wallet, at once.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from extensions import db
from models import (
    OPEN_REFUND_STATUSES,
    Dispute,
    PaymentPurpose,
    PaymentStatus,
    Refund,
    RefundStatus,
    TransitionSource,
)
from services.movements import lifecycle
from services.movements.effects import wallet_paid
from services.movements.locks import lock_order_of, lock_payment_row, locked_order
from services.platform.errors import ClientError, ConflictError, NotFoundError, UnprocessableError
from services.platform.locales import money_text
from services.refunds.kind import REFUND
from services.refunds.state import (
    REFUNDED_ORDER_STATUSES,
    WALLET,
    move_refund,
    record_creation,
    take_from_wallet,
)
from services.wallet.ledger import WalletError

MIN_REASON = 5


# What else a new refund decides, in its transaction (a customer's request approved).
Decided = Callable[[Refund], None]


def refund_payment(
    payment_id: int,
    amount_minor: object,
    reason: str,
    actor: str,
    key: uuid.UUID,
    decided: Decided | None = None,
) -> tuple[Refund, bool]:
    """Refund (part of) a charged payment through its provider. Returns (refund, is_new);
    a repeat with the same key returns the same refund. `decided` runs on a new refund
    before the commit, under the locks (it may raise ClientError: nothing is written).
    Commits, then enqueues."""
    reason = _reason(reason)
    lock_order_of(payment_id)
    payment = lock_payment_row(payment_id)
    if payment is None:
        db.session.rollback()
        raise NotFoundError(f"no payment {payment_id}", code="payment_not_found")
    existing = _by_key(key)
    if existing is not None:
        return _repeat(existing, amount_minor, payment_id=payment_id)
    if payment.status != PaymentStatus.SUCCEEDED or not payment.provider_payment_id:
        db.session.rollback()
        raise ConflictError(
            f"payment {payment_id} is {payment.status.value}: only a charged payment is refunded",
            code="payment_not_refundable",
        )
    if _is_disputed(payment_id):
        db.session.rollback()
        raise ConflictError(
            f"payment {payment_id} is disputed: the bank holds its money, so it cannot be "
            "refunded too (Stripe refuses it); answer the dispute instead",
            code="payment_disputed",
        )
    already = _refunded(Refund.payment_id == payment_id)
    refund = Refund(
        idempotency_key=key,
        payment_id=payment.id,
        order_id=payment.order_id,
        provider=payment.provider,
        amount_minor=_amount(amount_minor, payment.amount_minor - already, payment.currency),
        currency=payment.currency,
        reason=reason,
        actor=actor[:254],
    )
    _insert(refund)
    if payment.purpose == PaymentPurpose.WALLET_TOPUP:
        try:
            take_from_wallet(refund, payment)
        except WalletError as exc:
            db.session.rollback()
            raise ConflictError(
                f"payment {payment_id} cannot be refunded: the top-up's money was already "
                f"spent from the wallet ({exc}). Nothing was changed.",
                code="credit_spent",
            ) from None
    _decide(decided, refund)
    db.session.commit()
    lifecycle.enqueue_send(REFUND, refund.provider, refund.id, is_first=True)
    return refund, True


def refund_wallet_order(
    order_id: int,
    amount_minor: object,
    reason: str,
    actor: str,
    key: uuid.UUID,
    decided: Decided | None = None,
) -> tuple[Refund, bool]:
    """Refund (part of) an order paid from the wallet, to the wallet (`decided` as
    refund_payment's). Commits."""
    reason = _reason(reason)
    order = locked_order(order_id)
    if order is None:
        db.session.rollback()
        raise NotFoundError(f"no order {order_id}", code="order_not_found")
    existing = _by_key(key)
    if existing is not None:
        return _repeat(existing, amount_minor, order_id=order_id)
    paid = wallet_paid(order_id)
    if order.status not in REFUNDED_ORDER_STATUSES or paid <= 0:
        db.session.rollback()
        raise ConflictError(
            f"order {order_id} is {order.status.value} and was not paid from the wallet "
            "(a card payment is refunded through the payment)",
            code="order_not_refundable",
        )
    already = _refunded(Refund.order_id == order_id, Refund.provider == WALLET)
    refund = Refund(
        idempotency_key=key,
        order_id=order.id,
        provider=WALLET,
        amount_minor=_amount(amount_minor, paid - already, order.currency),
        currency=order.currency,
        reason=reason,
        actor=actor[:254],
    )
    _insert(refund)
    move_refund(
        refund,
        RefundStatus.SUCCEEDED,
        source=TransitionSource.ADMIN,
        reason="refunded to the wallet",
        actor=actor[:254],
    )
    _decide(decided, refund)
    db.session.commit()
    return refund, True


def _decide(decided: Decided | None, refund: Refund) -> None:
    if decided is None:
        return
    try:
        decided(refund)
    except ClientError:
        db.session.rollback()  # nothing of the refund is written
        raise


def _reason(reason: str) -> str:
    cleaned = " ".join(str(reason).split())[:500]
    if len(cleaned) < MIN_REASON:
        raise UnprocessableError(
            f"a reason (at least {MIN_REASON} characters) is required", code="reason_required"
        )
    return cleaned


def _amount(raw: object, refundable: int, currency: str) -> int:
    """The amount asked (all that is left when None), at most what is left to refund."""
    if refundable <= 0:
        db.session.rollback()
        raise ConflictError("everything charged was refunded already", code="fully_refunded")
    if raw is None:
        return refundable
    if isinstance(raw, bool) or not isinstance(raw, int) or raw <= 0:
        db.session.rollback()
        raise UnprocessableError("amount_minor must be a positive integer", code="invalid_amount")
    if raw > refundable:
        db.session.rollback()
        raise UnprocessableError(
            f"at most {money_text(refundable, currency)} is left to refund",
            code="refund_exceeds_charge",
        )
    return raw


def _refunded(*where: object) -> int:
    """What counts against the charge: every refund that did not fail (rows locked above)."""
    return int(
        db.session.scalar(
            select(func.coalesce(func.sum(Refund.amount_minor), 0)).where(
                *where,  # type: ignore[arg-type]  # conditions built from mapped columns are typed as bool
                Refund.status.in_(OPEN_REFUND_STATUSES),
            )
        )
        or 0
    )


def _is_disputed(payment_id: int) -> bool:
    """A chargeback holds the payment's money (an inquiry does not)."""
    return (
        db.session.scalar(
            select(Dispute.id)
            .where(Dispute.payment_id == payment_id, Dispute.is_effect_applied.is_(True))
            .limit(1)
        )
        is not None
    )


def _by_key(key: uuid.UUID) -> Refund | None:
    return db.session.scalar(select(Refund).where(Refund.idempotency_key == key))


def _repeat(
    existing: Refund,
    amount_minor: object,
    *,
    payment_id: int | None = None,
    order_id: int | None = None,
) -> tuple[Refund, bool]:
    same_target = (
        existing.payment_id == payment_id
        if payment_id is not None
        else existing.order_id == order_id
    )
    if not same_target or (amount_minor is not None and amount_minor != existing.amount_minor):
        db.session.rollback()
        raise UnprocessableError(
            "this idempotency key was used for another refund", code="idempotency_key_reused"
        )
    db.session.rollback()  # nothing written: release the locks
    db.session.refresh(existing)
    return existing, False


def _insert(refund: Refund) -> None:
    try:
        with db.session.begin_nested():
            db.session.add(refund)
            db.session.flush()
    except IntegrityError:
        db.session.rollback()
        raise ClientError(
            "this refund is being recorded right now; ask again",
            code="refund_in_progress",
            status=409,
        ) from None
    record_creation(refund)
