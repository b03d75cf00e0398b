"""The one lock order of the system, in one place: order, then payment, then refund or
dispute, then wallet. Every transaction that may touch two of them takes them in this
order (a checkout holds its order while it inserts a payment, so a job that updated a
payment and only then asked for the order deadlocked with it). Each function is named
by what it locks; rows come back fresh from the database (populate_existing)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from extensions import db
from models import Customer, Dispute, Order, Payment, Refund
from services.platform.errors import NotFoundError


def _fresh(model: Any, row_id: int) -> Any:
    return db.session.scalar(
        select(model)
        .where(model.id == row_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


def lock_order_of(payment_id: int, order_id: int | None = None) -> None:
    """Lock the order of an order payment (if any) until the transaction ends."""
    if order_id is None:  # not known to the caller: look it up (it never changes)
        order_id = db.session.scalar(select(Payment.order_id).where(Payment.id == payment_id))
    if order_id is not None:
        db.session.execute(select(Order.id).where(Order.id == order_id).with_for_update())


def locked_order(order_id: int | None) -> Order | None:
    """The order row, locked (its payments' transactions hold it first already)."""
    return None if order_id is None else _fresh(Order, order_id)


def lock_owned_order(customer: Customer, order_id: int) -> Order:
    """The customer's order, locked until the transaction ends."""
    order = db.session.scalar(
        select(Order)
        .where(Order.id == order_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if order is None or order.customer_id != customer.id:
        raise NotFoundError(f"no order {order_id}", code="order_not_found")
    return order


def lock_payment(payment_id: int) -> Payment | None:
    """The payment row (its order first), locked until the transaction ends."""
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
    return _fresh(Payment, payment_id)


def lock_refund(refund_id: int) -> Refund | None:
    """The refund, locked after its order and payment."""
    found = db.session.execute(
        select(Refund.payment_id, Refund.order_id).where(Refund.id == refund_id)
    ).first()
    if found is None:
        return None
    if found.payment_id is not None:
        lock_order_of(found.payment_id)
        db.session.scalar(
            select(Payment.id).where(Payment.id == found.payment_id).with_for_update()
        )
    elif found.order_id is not None:
        db.session.scalar(select(Order.id).where(Order.id == found.order_id).with_for_update())
    return _fresh(Refund, refund_id)


def lock_dispute(dispute_id: int) -> Dispute | None:
    """The dispute, locked after its payment's order and the payment."""
    payment_id = db.session.scalar(select(Dispute.payment_id).where(Dispute.id == dispute_id))
    if payment_id is None:
        return None
    lock_payment(payment_id)
    return _fresh(Dispute, dispute_id)
