from __future__ import annotations

import enum
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from models.base import Model
from models.order_line import OrderLine
from models.types import UTCDateTime, str_enum, utcnow

if TYPE_CHECKING:
    from models.customer import Customer


class OrderStatus(enum.StrEnum):
    OPEN = "open"
    PAID = "paid"
    PARTIALLY_REFUNDED = "partially_refunded"  # paid; part of the money went back
    REFUNDED = "refunded"  # paid; all of the money went back
    DISPUTED = "disputed"  # paid; a chargeback holds the money (back to paid if won)


# An order in these states was paid once, whatever went back since.
PAID_LIKE = frozenset(
    {OrderStatus.PAID, OrderStatus.PARTIALLY_REFUNDED, OrderStatus.REFUNDED, OrderStatus.DISPUTED}
)


class Order(Model):
    """What a customer wants to buy; `total_minor` is computed on the server from its lines."""

    __tablename__ = "orders"
    __table_args__ = (CheckConstraint("total_minor > 0", name="total_positive"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id"), index=True)
    # Read-only, for the dashboard's filter by email (never loaded on a money path).
    customer: Mapped[Customer] = relationship(viewonly=True, lazy="raise_on_sql")
    status: Mapped[OrderStatus] = mapped_column(
        str_enum(OrderStatus, "order_status", length=24),
        default=OrderStatus.OPEN,
    )
    total_minor: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)
    paid_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    lines: Mapped[list[OrderLine]] = relationship(order_by=OrderLine.id)
