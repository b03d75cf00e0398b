from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db
from models.types import UTCDateTime, utcnow


class LedgerEntry(db.Model):  # type: ignore[name-defined]
    """One signed movement of a wallet's balance. UNIQUE operation_id makes repeats no-ops."""

    __tablename__ = "ledger_entries"
    __table_args__ = (
        CheckConstraint("amount_minor <> 0", name="amount_non_zero"),
        CheckConstraint("balance_after_minor >= 0", name="balance_after_non_negative"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    wallet_id: Mapped[int] = mapped_column(ForeignKey("wallets.id"), index=True)
    # Idempotency key of the money movement: client key, or derived ("topup:<payment id>").
    operation_id: Mapped[str] = mapped_column(String(100), unique=True)
    amount_minor: Mapped[int] = mapped_column(BigInteger)  # credits > 0, debits < 0
    kind: Mapped[str] = mapped_column(
        String(16)
    )  # topup | debit | order (paid an order) | reversal | refund
    reference: Mapped[str] = mapped_column(String(200), default="")
    balance_after_minor: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
