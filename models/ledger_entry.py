from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db
from models.types import UTCDateTime, str_enum, utcnow


class LedgerKind(enum.StrEnum):
    """What moved a wallet's balance."""

    TOPUP = "topup"  # a top-up payment's success
    DEBIT = "debit"  # a client's debit (API)
    ORDER = "order"  # an order paid from the wallet
    REVERSAL = "reversal"  # a top-up's credit taken back (an admin decided it failed)
    REFUND = "refund"
    DISPUTE = "dispute"  # a chargeback took a top-up back, or a won dispute returned it


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
    kind: Mapped[LedgerKind] = mapped_column(str_enum(LedgerKind, "ledger_kind"))
    reference: Mapped[str] = mapped_column(String(200), default="")
    balance_after_minor: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
