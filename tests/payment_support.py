"""Payments made for a state-machine test: committed, and locked when the test moves them."""

from __future__ import annotations

from extensions import db
from models import Payment, PaymentStatus
from services.movements.locks import lock_payment
from tests.factories import make_customer, make_order, make_payment, make_topup


def locked_order_payment(status: PaymentStatus = PaymentStatus.PENDING) -> Payment:
    """An order's payment in `status`, committed, then locked (its order first)."""
    payment = make_payment(make_order(make_customer()))
    payment.status = status
    db.session.commit()
    locked = lock_payment(payment.id)
    assert locked is not None
    return locked


def committed_topup_row(amount_minor: int = 500) -> Payment:
    """A pending top-up of a new EUR wallet, committed."""
    payment = make_topup(make_customer(), amount_minor)
    db.session.commit()
    return payment
