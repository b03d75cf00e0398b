"""A customer's order as they see it: its lines, when it was placed and paid, every
payment tried for it with its status, the refunds with their dates, and what it cost in
the end (paid minus refunded)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from extensions import db
from models import Customer, Order, Payment, Refund
from services.payments.checkout import owned_order
from services.payments.reads import refunded_minor, refunds_of


@dataclass(frozen=True)
class OrderPage:
    order: Order
    payments: list[Payment]
    refunds: list[Refund]
    paid_minor: int
    refunded_minor: int

    @property
    def net_minor(self) -> int:
        """What the customer paid in the end."""
        return self.paid_minor - self.refunded_minor


def order_page(customer: Customer, order_id: int) -> OrderPage:
    """The customer's own order; NotFoundError for anyone else's (as a missing one)."""
    order = owned_order(customer, order_id)
    payments = list(
        db.session.scalars(select(Payment).where(Payment.order_id == order.id).order_by(Payment.id))
    )
    refunds = refunds_of(order_id=order.id)
    paid = order.total_minor if order.paid_at is not None else 0
    return OrderPage(order, payments, refunds, paid, refunded_minor(refunds))
