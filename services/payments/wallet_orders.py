"""Paying an open order from the wallet: the debit and the order's payment, one transaction."""

from __future__ import annotations

from sqlalchemy import select

from extensions import db
from models import (
    Customer,
    EmailKind,
    LedgerEntry,
    LedgerKind,
    OrderStatus,
    Payment,
    PaymentStatus,
    Source,
    SourceKind,
)
from services.movements import effects
from services.movements.locks import lock_owned_order
from services.notifications.outbox import queue_email
from services.platform.errors import ConflictError
from services.wallet import ledger


def pay_order_from_wallet(customer: Customer, order_id: int, operation_id: str) -> ledger.Movement:
    """Debit the order's total and mark it paid, once per operation id. Commits.

    Raises NotFoundError, ConflictError (order not open, or a card payment is under
    way) and WalletError subclasses (insufficient funds...); nothing is written then.
    """
    source = Source(SourceKind.ORDER, order_id)
    try:
        order = lock_owned_order(customer, order_id)
        if order.status != OrderStatus.OPEN:
            earlier = db.session.scalar(
                select(LedgerEntry).where(LedgerEntry.operation_id == operation_id)
            )
            if earlier is not None and earlier.source == source:
                db.session.rollback()  # a repeat of the payment that paid it
                return ledger.Movement(
                    earlier.id,
                    earlier.wallet_id,
                    operation_id,
                    earlier.amount_minor,
                    earlier.balance_after_minor,
                    True,
                )
            raise ConflictError(f"order {order.id} is {order.status.value}", code="order_not_open")
        card = db.session.scalar(
            select(Payment.id).where(
                Payment.order_id == order.id, Payment.status != PaymentStatus.FAILED
            )
        )
        if card is not None:
            raise ConflictError(
                f"order {order.id} already has payment {card} under way",
                code="order_payment_in_progress",
                details={"payment_id": card},
            )
        target = ledger.wallet_of(customer, order.currency)
        movement = ledger.apply_movement(
            target.id,
            -order.total_minor,
            order.currency,
            operation_id=operation_id,
            kind=LedgerKind.ORDER,  # the audit counts these as what paid the order
            source=source,
            step="paid",  # the books: revenue, out of what the wallet's account owed
        )
        if not movement.is_replay:
            effects.settle_order(order)  # paid: the ORDER posting is its effect
            queue_email(EmailKind.WALLET_RECEIPT, order.id, customer_id=customer.id)
    except Exception:
        db.session.rollback()
        raise
    db.session.commit()
    return movement
