"""The books: a double-entry journal of every movement of money.

A journal entry belongs to one step of one of our movements (`source_kind`, `source_id`,
`step`: "payment 7 succeeded"), UNIQUE: a repeat of the step posts nothing. Its postings
move amounts between accounts, signed (debits > 0, credits < 0), and sum to zero per
currency: the database checks it when the transaction commits (a deferred constraint
trigger, migration 0028), and refuses to change or delete a posted entry.

An account is an address built by `Account` (never client text): its balance in a
currency is the sum of its postings in it.
"""

from __future__ import annotations

import re
from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    ForeignKey,
    Index,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Model
from models.ledger_entry import SourceKind
from models.types import UTCDateTime, str_enum, utcnow

_NAME = "[a-z][a-z0-9_]*"
# The addresses an account may have (the database checks every posting's).
ACCOUNT_PATTERN = (
    "^(revenue|refunds|disputes|adjustments|wallet:[1-9][0-9]*"
    f"|clearing:{_NAME}|fees:{_NAME}|bank:{_NAME}|fx:{_NAME})$"
)
_ACCOUNT = re.compile(ACCOUNT_PATTERN)


class Account:
    """The chart of accounts, as addresses (docs/books.md):

    - `revenue`: what customers paid for orders (an order's payment, card or wallet);
    - `refunds`: what we gave back (a contra-revenue account);
    - `disputes`: what chargebacks withdrew and not reinstated;
    - `adjustments`: what wallets were credited with (or owed) outside every movement of
      ours: a seeded opening balance, the balances carried in when the books began;
    - `wallet:<id>`: what we owe a customer (their wallet's balance, a liability);
    - `clearing:<provider>`: what the provider holds for us (charges in, refunds and
      disputes out, fees and payouts out);
    - `fees:<provider>`: what the provider kept;
    - `bank:<provider>`: what the provider paid out to our bank;
    - `fx:<provider>`: the currency conversions of a provider that settled a movement in
      another currency than ours (at its exchange rate): per currency, what it took in
      one and gave in the other.
    """

    REVENUE = "revenue"
    REFUNDS = "refunds"
    DISPUTES = "disputes"
    ADJUSTMENTS = "adjustments"

    @staticmethod
    def wallet(wallet_id: int) -> str:
        return _checked(f"wallet:{int(wallet_id)}")

    @staticmethod
    def clearing(provider: str) -> str:
        return _checked(f"clearing:{provider}")

    @staticmethod
    def fees(provider: str) -> str:
        return _checked(f"fees:{provider}")

    @staticmethod
    def bank(provider: str) -> str:
        return _checked(f"bank:{provider}")

    @staticmethod
    def fx(provider: str) -> str:
        return _checked(f"fx:{provider}")


def _checked(address: str) -> str:
    if not _ACCOUNT.match(address):
        raise ValueError(f"not an account: {address!r}")
    return address


class JournalEntry(Model):
    """One step of one movement, as a balanced set of postings (`Posting`)."""

    __tablename__ = "journal_entries"
    __table_args__ = (UniqueConstraint("source_kind", "source_id", "step"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    source_kind: Mapped[SourceKind] = mapped_column(str_enum(SourceKind, "journal_source_kind"))
    source_id: Mapped[int] = mapped_column(BigInteger)
    step: Mapped[str] = mapped_column(String(32))  # "succeeded", "reversed:1", ...
    # Indexed: a day's entries are read by it (the reconciliation, the day's CSV).
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)


class Posting(Model):
    """An amount moved into (debit, > 0) or out of (credit, < 0) an account.

    A wallet's posting names the wallet's ledger entry it is (`ledger_entry_id`, UNIQUE):
    every ledger entry has exactly one, of the opposite sign (a credit to the wallet is a
    credit to the account we owe it from), checked by the database when the transaction
    commits (migration 0030). So a wallet's balance is its account's balance, negated.
    """

    __tablename__ = "postings"
    __table_args__ = (
        CheckConstraint("amount_minor <> 0", name="amount_non_zero"),
        CheckConstraint(f"account ~ '{ACCOUNT_PATTERN}'", name="account_address"),
        CheckConstraint("currency ~ '^[A-Z]{3}$'", name="currency_code"),
        CheckConstraint(
            "(account LIKE 'wallet:%') = (ledger_entry_id IS NOT NULL)", name="wallet_leg_linked"
        ),
        Index("ix_postings_account_currency", "account", "currency"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    entry_id: Mapped[int] = mapped_column(ForeignKey("journal_entries.id"), index=True)
    account: Mapped[str] = mapped_column(String(64))
    amount_minor: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3))
    ledger_entry_id: Mapped[int | None] = mapped_column(
        ForeignKey("ledger_entries.id"), unique=True, nullable=True
    )
