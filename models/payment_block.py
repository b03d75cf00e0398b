from __future__ import annotations

from datetime import datetime

from sqlalchemy import String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Model
from models.types import UTCDateTime, utcnow


class PaymentBlock(Model):
    """Card testing: a client address whose declines passed the limit is refused new
    payments until `until` (services/payments/attempts.py). Read by the intake's one
    statement, so it costs no round trip; one row per address, moved on at a new trip."""

    __tablename__ = "payment_blocks"
    __table_args__ = (UniqueConstraint("scope", "key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    scope: Mapped[str] = mapped_column(String(16))  # "address"
    key: Mapped[str] = mapped_column(String(64))  # the address, hashed (never in clear)
    until: Mapped[datetime] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
