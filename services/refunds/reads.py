"""What the dashboard's refund page shows: what was charged, what went back, what is left."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select

from extensions import db
from models import (
    OPEN_REFUND_STATUSES,
    Order,
    Payment,
    PaymentStatus,
    Refund,
)
from services.movements.effects import wallet_paid
from services.refunds.state import REFUNDED_ORDER_STATUSES, WALLET


@dataclass
class RefundPage:
    title: str
    currency: str
    charged_minor: int
    refunds: list[Refund] = field(default_factory=list)
    blocked: str = ""  # why no refund can be made now ('' when one can)

    @property
    def counted_minor(self) -> int:
        """What counts against the charge: every refund that did not fail."""
        return sum(r.amount_minor for r in self.refunds if r.status in OPEN_REFUND_STATUSES)

    @property
    def left_minor(self) -> int:
        return max(0, self.charged_minor - self.counted_minor)


def refund_page(what: str, target_id: int) -> RefundPage | None:
    if what == "payment":
        payment = db.session.get(Payment, target_id)
        if payment is None:
            return None
        page = RefundPage(
            f"payment #{payment.id}"
            + (f" of order #{payment.order_id}" if payment.order_id else " (a wallet top-up)"),
            payment.currency,
            payment.amount_minor,
            _refunds(Refund.payment_id == payment.id),
        )
        if payment.status != PaymentStatus.SUCCEEDED:
            page.blocked = (
                f"the payment is {payment.status.value}: only a charged payment is refunded"
            )
    else:
        order = db.session.get(Order, target_id)
        if order is None:
            return None
        paid = wallet_paid(order.id)
        page = RefundPage(
            f"order #{order.id} paid from the wallet",
            order.currency,
            paid,
            _refunds(Refund.order_id == order.id, Refund.provider == WALLET),
        )
        if order.status not in REFUNDED_ORDER_STATUSES or paid <= 0:
            page.blocked = f"the order is {order.status.value} and was not paid from the wallet"
    if not page.blocked and page.left_minor <= 0:
        page.blocked = "everything charged was refunded already"
    return page


def _refunds(*where: object) -> list[Refund]:
    return list(db.session.scalars(select(Refund).where(*where).order_by(Refund.id)))  # type: ignore[arg-type]  # conditions built from mapped columns are typed as bool


def currency_of(*, payment_id: int | None = None, order_id: int | None = None) -> str | None:
    """The currency a refund of this payment or order is in; None when there is none."""
    target = (
        db.session.get(Payment, payment_id)
        if payment_id is not None
        else db.session.get(Order, order_id or 0)
    )
    return target.currency if target is not None else None
