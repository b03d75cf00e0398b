from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Model
from models.types import UTCDateTime, utcnow


class Wallet(Model):
    """A customer's internal balance in one currency; changes only with a ledger entry."""

    __tablename__ = "wallets"
    __table_args__ = (
        UniqueConstraint("customer_id", "currency"),
        # The last barrier against overdraft; services check funds first under a row lock.
        CheckConstraint("balance_minor >= 0", name="balance_non_negative"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id"))
    currency: Mapped[str] = mapped_column(String(3))
    balance_minor: Mapped[int] = mapped_column(BigInteger, default=0)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)
