"""What the dashboard shows of one customer: the newest of each kind of their records
(orders, payments, refunds, wallets, emails)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, or_, select

from extensions import db
from models import Customer, Order, OutboxMessage, Payment, Refund, Wallet

RECORDS_SHOWN = 50  # the newest; the lists filtered by the customer show the rest


def customer_records(customer: Customer, what: str) -> list[Any]:
    """The newest `what` (orders, payments, refunds, wallets or emails) of the customer."""
    paid = select(Payment.id).where(Payment.customer_id == customer.id)
    ordered = select(Order.id).where(Order.customer_id == customer.id)
    model: Any
    model, where = {
        "orders": (Order, Order.customer_id == customer.id),
        "payments": (Payment, Payment.customer_id == customer.id),
        "refunds": (Refund, or_(Refund.payment_id.in_(paid), Refund.order_id.in_(ordered))),
        "wallets": (Wallet, Wallet.customer_id == customer.id),
        "emails": (OutboxMessage, OutboxMessage.recipient == customer.email),
    }[what]
    return list(
        db.session.scalars(
            select(model).where(where).order_by(model.id.desc()).limit(RECORDS_SHOWN)
        )
    )


def order_records(order_id: int, what: str) -> list[Any]:
    """An order's payments (every attempt, newest first) or refunds."""
    model: Any = Payment if what == "payments" else Refund
    return list(
        db.session.scalars(
            select(model).where(model.order_id == order_id).order_by(model.id.desc())
        )
    )


def refunds_of_email(email: str) -> ColumnElement[bool]:
    """Refunds of the customer with this email: through their payment (a card payment or a
    top-up) or their order (an order paid from the wallet has no payment)."""
    customer = select(Customer.id).where(Customer.email == email.strip().lower())
    paid = select(Payment.id).where(Payment.customer_id.in_(customer))
    ordered = select(Order.id).where(Order.customer_id.in_(customer))
    return or_(Refund.payment_id.in_(paid), Refund.order_id.in_(ordered))
