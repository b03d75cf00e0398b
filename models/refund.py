"""Refunds: money going back, with the same guarantees as the charge that took it."""

from __future__ import annotations

import enum
import uuid
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    ForeignKey,
    Index,
    String,
    UniqueConstraint,
    Uuid,
    false,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from models.base import Model
from models.payment_transition import TransitionSource
from models.types import UTCDateTime, str_enum, utcnow

if TYPE_CHECKING:
    from models.payment import Payment


WALLET = "wallet"  # the provider name of a refund to the wallet (no provider call)


class RefundStatus(enum.StrEnum):
    """A refund's states: the same rules as a payment's (models/payment.py)."""

    PENDING = "pending"  # recorded; the provider may not have been asked yet
    UNKNOWN = "unknown"  # asked, outcome not known: only the provider can tell
    # The provider has the refund and says it is on its way (Stripe: `pending`): its
    # outcome comes with an event or a later lookup, days later for some cards.
    PROCESSING = "processing"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    NEEDS_REVIEW = "needs_review"

    @property
    def is_final(self) -> bool:
        return self in (RefundStatus.SUCCEEDED, RefundStatus.FAILED, RefundStatus.NEEDS_REVIEW)


REFUND_TRANSITIONS: dict[RefundStatus, frozenset[RefundStatus]] = {
    RefundStatus.PENDING: frozenset(
        {
            RefundStatus.UNKNOWN,
            RefundStatus.PROCESSING,
            RefundStatus.SUCCEEDED,
            RefundStatus.FAILED,
            RefundStatus.NEEDS_REVIEW,
        }
    ),
    RefundStatus.UNKNOWN: frozenset(
        {
            RefundStatus.PROCESSING,
            RefundStatus.SUCCEEDED,
            RefundStatus.FAILED,
            RefundStatus.NEEDS_REVIEW,
        }
    ),
    RefundStatus.PROCESSING: frozenset(
        {RefundStatus.SUCCEEDED, RefundStatus.FAILED, RefundStatus.NEEDS_REVIEW}
    ),
    # A refund the provider reported succeeded may fail later (Stripe documents it: the
    # card's bank could not take the money back); only the provider's word moves it.
    RefundStatus.SUCCEEDED: frozenset({RefundStatus.FAILED, RefundStatus.NEEDS_REVIEW}),
    RefundStatus.FAILED: frozenset({RefundStatus.NEEDS_REVIEW}),
    RefundStatus.NEEDS_REVIEW: frozenset({RefundStatus.SUCCEEDED, RefundStatus.FAILED}),
}
# What counts against the amount charged: everything but a failed refund.
OPEN_REFUND_STATUSES = tuple(s for s in RefundStatus if s != RefundStatus.FAILED)


class Refund(Model):
    """Money going back to a customer for a payment (through its provider) or for an order
    paid from the wallet (to the wallet, no provider). Committed before any provider call,
    under a lock of what it refunds, which the refunds never exceed."""

    __tablename__ = "refunds"
    __table_args__ = (
        UniqueConstraint("provider", "provider_refund_id"),
        CheckConstraint("amount_minor > 0", name="amount_positive"),
        CheckConstraint("payment_id IS NOT NULL OR order_id IS NOT NULL", name="refunds_something"),
        Index("ix_refunds_status_next_reconcile_at", "status", "next_reconcile_at"),
        Index("ix_refunds_provider_refund_id", "provider_refund_id"),  # the search
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    idempotency_key: Mapped[uuid.UUID] = mapped_column(Uuid(), unique=True)
    payment_id: Mapped[int | None] = mapped_column(ForeignKey("payments.id"), index=True)
    # Read-only, for the dashboard's filter by the customer's email (never loaded on a
    # money path).
    payment: Mapped[Payment | None] = relationship(viewonly=True, lazy="raise_on_sql")
    order_id: Mapped[int | None] = mapped_column(ForeignKey("orders.id"), index=True)
    # The payment's provider, or "wallet" for an order paid from the wallet.
    provider: Mapped[str] = mapped_column(String(32))
    amount_minor: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3))
    reason: Mapped[str] = mapped_column(String(500))
    actor: Mapped[str] = mapped_column(String(254))  # the admin's email, or "cli"
    status: Mapped[RefundStatus] = mapped_column(
        str_enum(RefundStatus, "refund_status"), default=RefundStatus.PENDING
    )
    provider_refund_id: Mapped[str | None] = mapped_column(String(255))
    failure_code: Mapped[str | None] = mapped_column(String(64))
    first_sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # The latest request's: a lookup's replay is a send too, and absence waits a settle
    # window after it.
    last_sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    send_count: Mapped[int] = mapped_column(default=0)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    next_reconcile_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    reconcile_attempts: Mapped[int] = mapped_column(default=0)
    last_error: Mapped[str | None] = mapped_column(String(500))
    # The refund's effect (order refunded, wallet moved) is in place.
    is_effect_applied: Mapped[bool] = mapped_column(default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)


class RefundTransition(Model):
    """The refund's audit trail: one row per status change, never updated."""

    __tablename__ = "refund_transitions"

    id: Mapped[int] = mapped_column(primary_key=True)
    refund_id: Mapped[int] = mapped_column(ForeignKey("refunds.id"), index=True)
    from_status: Mapped[RefundStatus | None] = mapped_column(
        str_enum(RefundStatus, "refund_from_status")
    )
    to_status: Mapped[RefundStatus] = mapped_column(str_enum(RefundStatus, "refund_to_status"))
    source: Mapped[TransitionSource] = mapped_column(
        str_enum(TransitionSource, "refund_transition_source")
    )
    reason: Mapped[str] = mapped_column(String(500), default="")
    actor: Mapped[str | None] = mapped_column(String(254))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
