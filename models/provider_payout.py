"""A payout: the provider sending our money to our bank, as its events tell it
(services/payouts/events.py). UNIQUE by (provider, payout id); its status only moves
forward (pending -> in_transit -> paid; failed or canceled, even after paid, as Stripe
documents); its amount and currency are the first event's, and an event that says
otherwise changes nothing. The books post a payout from the provider's balance (the
daily reconciliation), which compares it with this record."""

from __future__ import annotations

import enum
from datetime import date, datetime

from sqlalchemy import BigInteger, Date, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Model
from models.types import UTCDateTime, str_enum, utcnow


class PayoutStatus(enum.StrEnum):
    """Stripe's payout statuses."""

    PENDING = "pending"
    IN_TRANSIT = "in_transit"
    PAID = "paid"
    FAILED = "failed"  # the bank refused it: the money is back in the provider's balance
    CANCELED = "canceled"

    @property
    def rank(self) -> int:
        """How far along: a status moves only to a higher rank (paid may still fail)."""
        return PAYOUT_RANKS[self]


PAYOUT_RANKS = {
    PayoutStatus.PENDING: 0,
    PayoutStatus.IN_TRANSIT: 1,
    PayoutStatus.PAID: 2,
    PayoutStatus.FAILED: 3,
    PayoutStatus.CANCELED: 3,
}


class ProviderPayout(Model):
    __tablename__ = "provider_payouts"
    __table_args__ = (UniqueConstraint("provider", "payout_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    provider: Mapped[str] = mapped_column(String(32))
    payout_id: Mapped[str] = mapped_column(String(100))  # Stripe's po_...
    amount_minor: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3))
    status: Mapped[PayoutStatus] = mapped_column(str_enum(PayoutStatus, "payout_status"))
    arrival_date: Mapped[date | None] = mapped_column(Date, nullable=True)
    failure_code: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # The newest event applied (its creation time at the provider) and when.
    event_created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
