"""What an accountant reads of the journal: the trial balance as of any day (debit and
credit columns per account and currency), an account's general ledger with its running
balance, and the postings of a period, each with the provider's id of its movement.

A posting belongs to the day (UTC) its entry was posted."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy import case, func, select

from extensions import db
from models import Dispute, JournalEntry, Payment, Posting, ProviderBalanceTxn, Refund, SourceKind

BATCH = 5000  # postings read a batch at a time (a long period is never all in memory)


def day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, UTC)


@dataclass(frozen=True)
class Row:
    """An account's balance in a currency, in the trial balance's two columns."""

    account: str
    currency: str
    debit_minor: int
    credit_minor: int


def trial_balance(as_of: date) -> list[Row]:
    """Every account's balance per currency at the end of `as_of`, by account: a debit
    balance in the debit column, a credit balance in the credit column."""
    return [
        Row(account, currency, max(total, 0), max(-total, 0))
        for (account, currency), total in sorted(
            balances_before(day_start(as_of) + timedelta(days=1)).items()
        )
    ]


def balances_before(end: datetime, account: str | None = None) -> dict[tuple[str, str], int]:
    """Each account's balance per currency from the entries posted before `end`."""
    query = (
        select(Posting.account, Posting.currency, func.sum(Posting.amount_minor))
        .join(JournalEntry, JournalEntry.id == Posting.entry_id)
        .where(JournalEntry.created_at < end)
        .group_by(Posting.account, Posting.currency)
    )
    if account is not None:
        query = query.where(Posting.account == account)
    return {(name, cur): int(total) for name, cur, total in db.session.execute(query)}


def accounts_between(start: date, end: date) -> set[tuple[str, str]]:
    """The accounts (and currencies) posted to on the days [start, end]."""
    query = (
        select(Posting.account, Posting.currency)
        .join(JournalEntry, JournalEntry.id == Posting.entry_id)
        .where(
            JournalEntry.created_at >= day_start(start),
            JournalEntry.created_at < day_start(end) + timedelta(days=1),
        )
        .distinct()
    )
    return {(name, currency) for name, currency in db.session.execute(query)}


@dataclass(frozen=True)
class Line:
    """One posting of the journal, as an accountant's import reads it."""

    day: date
    entry_id: int
    account: str
    amount_minor: int
    currency: str
    source: str  # "payment 7 succeeded"
    provider_id: str  # what the provider calls the movement ("" when it has no call)


def lines(start: date, end: date, account: str | None = None) -> Iterator[Line]:
    """Every posting of the entries posted on the days [start, end] (UTC), in order (of
    one account only when it is given), read a batch at a time."""
    provider_id = case(
        (JournalEntry.source_kind == SourceKind.PAYMENT, Payment.provider_payment_id),
        (JournalEntry.source_kind == SourceKind.REFUND, Refund.provider_refund_id),
        (JournalEntry.source_kind == SourceKind.DISPUTE, Dispute.provider_dispute_id),
        (JournalEntry.source_kind == SourceKind.BALANCE, ProviderBalanceTxn.txn_id),
        else_=None,
    )
    query = (
        select(
            JournalEntry.created_at,
            JournalEntry.id,
            JournalEntry.source_kind,
            JournalEntry.source_id,
            JournalEntry.step,
            Posting.account,
            Posting.amount_minor,
            Posting.currency,
            provider_id,
            Posting.id,
        )
        .join(Posting, Posting.entry_id == JournalEntry.id)
        .outerjoin(
            Payment,
            (JournalEntry.source_kind == SourceKind.PAYMENT)
            & (Payment.id == JournalEntry.source_id),
        )
        .outerjoin(
            Refund,
            (JournalEntry.source_kind == SourceKind.REFUND) & (Refund.id == JournalEntry.source_id),
        )
        .outerjoin(
            Dispute,
            (JournalEntry.source_kind == SourceKind.DISPUTE)
            & (Dispute.id == JournalEntry.source_id),
        )
        .outerjoin(
            ProviderBalanceTxn,
            (JournalEntry.source_kind == SourceKind.BALANCE)
            & (ProviderBalanceTxn.id == JournalEntry.source_id),
        )
        .where(
            JournalEntry.created_at >= day_start(start),
            JournalEntry.created_at < day_start(end) + timedelta(days=1),
        )
        .order_by(JournalEntry.id, Posting.id)
    )
    if account is not None:
        query = query.where(Posting.account == account)
    for row in db.session.execute(query.execution_options(yield_per=BATCH)):
        at, entry_id, kind, source_id, step, name, amount, currency, ref, _ = row
        yield Line(
            at.astimezone(UTC).date(),
            entry_id,
            name,
            int(amount),
            currency,
            f"{kind.value} {source_id} {step}",
            ref or "",
        )


@dataclass(frozen=True)
class LedgerLine:
    line: Line
    balance_minor: int  # the account's balance in the line's currency after it


def ledger(account: str, start: date, end: date) -> tuple[dict[str, int], list[LedgerLine]]:
    """An account's general ledger over [start, end]: its opening balance per currency,
    then each posting with the running balance in its currency."""
    opening = {
        currency: total
        for (_, currency), total in balances_before(day_start(start), account).items()
        if total
    }
    running: dict[str, int] = defaultdict(int, opening)
    found = []
    for line in lines(start, end, account):
        running[line.currency] += line.amount_minor
        found.append(LedgerLine(line, running[line.currency]))
    return opening, found
