"""The daily reconciliation's records (services/statements/reconcile.py): the provider's
balance transactions as read, each day's result, and every item of it.

A provider balance transaction is UNIQUE by (provider, txn_id): reading a day again
updates nothing that was read. A day is UNIQUE by (provider, day): reconciling it again
replaces its items with the new result."""

from __future__ import annotations

import enum
from datetime import date, datetime
from decimal import Decimal

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Date,
    ForeignKey,
    Index,
    Integer,
    Numeric,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Model
from models.types import UTCDateTime, str_enum, utcnow


class ProviderBalanceTxn(Model):
    """One movement of our money at the provider, as its API said it (checked)."""

    __tablename__ = "provider_balance_transactions"
    __table_args__ = (
        UniqueConstraint("provider", "txn_id"),
        # A day's transactions read before (which of them vanished from its listing).
        Index("ix_provider_balance_transactions_provider_created_at", "provider", "created_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    provider: Mapped[str] = mapped_column(String(32))
    txn_id: Mapped[str] = mapped_column(String(100))
    type: Mapped[str] = mapped_column(String(32))
    category: Mapped[str] = mapped_column(String(32))
    source_id: Mapped[str] = mapped_column(String(100), index=True)  # ch_, re_, du_, po_
    payment_ref: Mapped[str | None] = mapped_column(String(100))  # a charge's intent
    amount_minor: Mapped[int] = mapped_column(BigInteger)
    fee_minor: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3))
    # Settled in another currency than the movement's: the provider's rate (else None).
    exchange_rate: Mapped[Decimal | None] = mapped_column(Numeric(24, 12), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    read_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class BalanceMatch(Model):
    """A provider's transaction matched to our entry: each at most once (UNIQUE both
    ways, append-only); a second claimant of either is a `duplicate` item."""

    __tablename__ = "balance_matches"

    id: Mapped[int] = mapped_column(primary_key=True)
    provider_txn_id: Mapped[int] = mapped_column(
        ForeignKey("provider_balance_transactions.id"), unique=True
    )
    entry_id: Mapped[int] = mapped_column(ForeignKey("journal_entries.id"), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class PayoutContent(Model):
    """A transaction a payout paid out: each in at most one payout (UNIQUE, append-only)."""

    __tablename__ = "payout_contents"

    id: Mapped[int] = mapped_column(primary_key=True)
    payout_txn_id: Mapped[int] = mapped_column(
        ForeignKey("provider_balance_transactions.id"), index=True
    )
    txn_id: Mapped[int] = mapped_column(ForeignKey("provider_balance_transactions.id"), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class BalanceCorrection(Model):
    """A transaction read again with another amount or fee: the n-th new read, kept
    beside the first (append-only)."""

    __tablename__ = "provider_balance_corrections"
    __table_args__ = (UniqueConstraint("provider_txn_id", "n"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    provider_txn_id: Mapped[int] = mapped_column(ForeignKey("provider_balance_transactions.id"))
    n: Mapped[int] = mapped_column(Integer)
    amount_minor: Mapped[int] = mapped_column(BigInteger)
    fee_minor: Mapped[int] = mapped_column(BigInteger)
    read_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class DayStatus(enum.StrEnum):
    RECONCILED = "reconciled"  # every item matched or booked
    UNRECONCILED = "unreconciled"  # one or more items to look at (red, alerted)


class ItemOutcome(enum.StrEnum):
    """What one item of a day is (docs/books.md says what the operator does about each)."""

    MATCHED = "matched"  # the provider's and ours agree
    BOOKED = "booked"  # the provider's movement we book as it reports it (fee, payout)
    MISSING_AT_PROVIDER = "missing_at_provider"  # ours, not in the provider's balance
    MISSING_AT_OURS = "missing_at_ours"  # the provider's, not in our books
    AMOUNT_DIFFERS = "amount_differs"
    CURRENCY_DIFFERS = "currency_differs"
    PAYOUT_DIFFERS = "payout_differs"  # a payout's contents do not sum to its amount
    UNREADABLE = "unreadable"  # the provider's item could not be believed
    DUPLICATE = "duplicate"  # a second claimant: listed twice, or an entry matched already
    CORRECTED = "corrected"  # read again with another amount or fee (adjusted)
    VANISHED = "vanished"  # read before, no longer in the provider's listing of its day
    BALANCE_DIFFERS = "balance_differs"  # our clearing balance against the provider's


class ReconciliationDay(Model):
    __tablename__ = "reconciliation_days"
    __table_args__ = (UniqueConstraint("provider", "day"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    provider: Mapped[str] = mapped_column(String(32))
    day: Mapped[date] = mapped_column(Date)
    status: Mapped[DayStatus] = mapped_column(str_enum(DayStatus, "day_status"))
    matched: Mapped[int] = mapped_column(Integer)
    unmatched: Mapped[int] = mapped_column(Integer)
    reconciled_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # Closed: its result and items never change (set only by a BookDayAudit row).
    closed_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    closed_by: Mapped[str | None] = mapped_column(String(120), nullable=True)


class DayAction(enum.StrEnum):
    CLOSED = "closed"
    REOPENED = "reopened"  # with a reason


class BookDayAudit(Model):
    """A day closed or reopened, by whom and why (append-only); its insert is what
    closes or reopens the day (a trigger, migration 0034)."""

    __tablename__ = "book_day_audit"
    __table_args__ = (
        CheckConstraint(
            "action = 'closed' OR coalesce(length(trim(reason)), 0) >= 3", name="reopen_reason"
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    day_id: Mapped[int] = mapped_column(ForeignKey("reconciliation_days.id"), index=True)
    action: Mapped[DayAction] = mapped_column(str_enum(DayAction, "book_day_action"))
    actor: Mapped[str] = mapped_column(String(120))
    reason: Mapped[str | None] = mapped_column(String(500), nullable=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ReconciliationItem(Model):
    __tablename__ = "reconciliation_items"

    id: Mapped[int] = mapped_column(primary_key=True)
    day_id: Mapped[int] = mapped_column(
        ForeignKey("reconciliation_days.id", ondelete="CASCADE"), index=True
    )
    outcome: Mapped[ItemOutcome] = mapped_column(str_enum(ItemOutcome, "item_outcome", 24))
    provider_txn_id: Mapped[int | None] = mapped_column(
        ForeignKey("provider_balance_transactions.id"), index=True
    )
    entry_id: Mapped[int | None] = mapped_column(ForeignKey("journal_entries.id"), index=True)
    theirs_minor: Mapped[int | None] = mapped_column(BigInteger)
    ours_minor: Mapped[int | None] = mapped_column(BigInteger)
    currency: Mapped[str | None] = mapped_column(String(3))
    detail: Mapped[str] = mapped_column(String(200))
