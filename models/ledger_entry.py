from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Model
from models.types import UTCDateTime, str_enum, utcnow


class LedgerKind(enum.StrEnum):
    """What moved a wallet's balance."""

    TOPUP = "topup"  # a top-up payment's success
    DEBIT = "debit"  # a client's debit (API)
    ORDER = "order"  # an order paid from the wallet
    REVERSAL = "reversal"  # a top-up's credit taken back (an admin decided it failed)
    REFUND = "refund"
    DISPUTE = "dispute"  # a chargeback took a top-up back, or a won dispute returned it
    ADJUSTMENT = "adjustment"  # a credit no movement of ours made (a seeded opening balance)


class SourceKind(enum.StrEnum):
    """Which of our movements a posting belongs to (the table its source_id names)."""

    PAYMENT = "payment"
    REFUND = "refund"
    DISPUTE = "dispute"
    ORDER = "order"
    BALANCE = "balance"  # a provider's balance transaction (its fee, a payout): books only
    # A wallet's ledger entry that names no movement (a client's debit, an adjustment, a
    # balance carried in when the books began): books only.
    LEDGER = "ledger"


@dataclass(frozen=True)
class Source:
    """The movement a posting belongs to, by type and row id: never text a client wrote."""

    kind: SourceKind
    id: int

    def __str__(self) -> str:
        return f"{self.kind.value} {self.id}"


# The source each kind of posting must name (None: it names none, e.g. a client's debit,
# whose text is only its memo). The database enforces it (ck_ledger_entries_source_typed).
SOURCE_OF_KIND: dict[LedgerKind, SourceKind | None] = {
    LedgerKind.TOPUP: SourceKind.PAYMENT,
    LedgerKind.REVERSAL: SourceKind.PAYMENT,
    LedgerKind.ORDER: SourceKind.ORDER,
    LedgerKind.REFUND: SourceKind.REFUND,
    LedgerKind.DISPUTE: SourceKind.DISPUTE,
    LedgerKind.DEBIT: None,
    LedgerKind.ADJUSTMENT: None,
}


def _source_check() -> str:
    cases = " ".join(
        f"WHEN '{kind.value}' THEN "
        + (
            f"source_kind IS NOT DISTINCT FROM '{source.value}'"
            if source
            else "source_kind IS NULL"
        )
        for kind, source in SOURCE_OF_KIND.items()
    )
    return f"(source_kind IS NULL) = (source_id IS NULL) AND CASE kind {cases} ELSE false END"


SOURCE_CHECK = _source_check()


class LedgerEntry(Model):
    """One signed movement of a wallet's balance. UNIQUE operation_id makes repeats no-ops.

    What the entry belongs to is typed (`source_kind`, `source_id`): every sum that
    decides money filters by them and the wallet. `memo` is a client's text (a debit's
    reference): shown, never matched.
    """

    __tablename__ = "ledger_entries"
    __table_args__ = (
        CheckConstraint("amount_minor <> 0", name="amount_non_zero"),
        CheckConstraint("balance_after_minor >= 0", name="balance_after_non_negative"),
        CheckConstraint(SOURCE_CHECK, name="source_typed"),
        Index("ix_ledger_entries_source", "source_kind", "source_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    wallet_id: Mapped[int] = mapped_column(ForeignKey("wallets.id"), index=True)
    # Idempotency key of the money movement: client key, or derived ("topup:<payment id>").
    operation_id: Mapped[str] = mapped_column(String(100), unique=True)
    amount_minor: Mapped[int] = mapped_column(BigInteger)  # credits > 0, debits < 0
    kind: Mapped[LedgerKind] = mapped_column(str_enum(LedgerKind, "ledger_kind"))
    source_kind: Mapped[SourceKind | None] = mapped_column(
        str_enum(SourceKind, "ledger_source_kind"), nullable=True
    )
    source_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    memo: Mapped[str] = mapped_column(String(200), default="")
    balance_after_minor: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    @property
    def source(self) -> Source | None:
        if self.source_kind is None or self.source_id is None:
            return None
        return Source(self.source_kind, self.source_id)
