"""A customer's request for a refund of their order: a reason, then a person decides
(services/refunds/requests.py). Approving makes a refund through the refund path;
declining sends the customer the shop's message."""

from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, String, text
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Model
from models.types import UTCDateTime, str_enum, utcnow


class RefundRequestStatus(enum.StrEnum):
    WAITING = "waiting"  # the customer asked; nobody has decided
    APPROVED = "approved"  # a refund was made for it (refund_id)
    DECLINED = "declined"  # the customer was told why (decision_message)


class RefundRequest(Model):
    __tablename__ = "refund_requests"
    __table_args__ = (
        # One waiting request per order: a second click, a second tab, asks nothing more.
        Index(
            "uq_refund_requests_waiting_order",
            "order_id",
            unique=True,
            postgresql_where=text("status = 'waiting'"),
        ),
        Index("ix_refund_requests_status_created_at", "status", "created_at"),
        CheckConstraint(
            "(status = 'approved') = (refund_id IS NOT NULL)", name="approved_has_refund"
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    order_id: Mapped[int] = mapped_column(ForeignKey("orders.id"), index=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id"), index=True)
    reason: Mapped[str] = mapped_column(String(500))
    status: Mapped[RefundRequestStatus] = mapped_column(
        str_enum(RefundRequestStatus, "refund_request_status"),
        default=RefundRequestStatus.WAITING,
    )
    refund_id: Mapped[int | None] = mapped_column(ForeignKey("refunds.id"))
    decided_by: Mapped[str | None] = mapped_column(String(254))
    decision_message: Mapped[str | None] = mapped_column(String(500))
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
