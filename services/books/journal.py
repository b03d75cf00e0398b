"""Posting to the journal (models/journal.py), in the caller's transaction.

Every step of a movement that moves money posts one entry (`post`): debits equal credits
per currency, checked here for a clear error and by the database at the commit (a
deferred trigger), so an unbalanced entry never commits however it was written. The
entry is UNIQUE by its step (`Source` and the step's name): a repeat posts nothing.

A charge's success posts inside its one statement (services/payments/settling.py, with
`SUCCESS_STEP`), the rest through `post`. Balances are sums of postings (`balances`);
`trial_balance` says per currency what all accounts add up to: zero, or the books are
broken.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from extensions import db
from models import JournalEntry, Posting, Source
from models.types import utcnow


@dataclass(frozen=True)
class Leg:
    """An amount into (debit, > 0) or out of (credit, < 0) an account (`Account`)."""

    account: str
    amount_minor: int
    currency: str
    ledger_entry_id: int | None = None  # a wallet's leg: the wallet's ledger entry it is


class UnbalancedEntryError(ValueError):
    """An entry whose debits and credits differ in a currency: a bug, never posted."""


# The step of a payment's success: one per success that stands (after a reversal, a new
# success is a new step: "succeeded:2"), as SQL over the payment's row `p`.
SUCCESS_STEP = """('succeeded' || CASE WHEN p.effect_reversals > 0
    THEN ':' || (p.effect_reversals + 1) ELSE '' END)"""


def success_step(reversals: int) -> str:
    """SUCCESS_STEP in Python: the step of the success after `reversals` reversals."""
    return "succeeded" + (f":{reversals + 1}" if reversals else "")


MANY = 5000  # post_many's entries per statement


# One entry and its postings, in one statement on a DB-API cursor: the legs as arrays, so
# one text serves any number of them. Nothing is written when the step was posted before.
POST_SQL = """
WITH entry AS (
    INSERT INTO journal_entries (source_kind, source_id, step, created_at)
    VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING id
)
INSERT INTO postings (entry_id, account, amount_minor, currency, ledger_entry_id)
SELECT entry.id, leg.account, leg.amount_minor, leg.currency, leg.ledger_entry_id
FROM entry CROSS JOIN unnest(%s::text[], %s::bigint[], %s::text[], %s::bigint[])
    AS leg(account, amount_minor, currency, ledger_entry_id)
RETURNING entry_id
"""


def post(source: Source, step: str, legs: Sequence[Leg]) -> bool:
    """Post the step's entry; False when it was posted before (nothing written)."""
    found = db.session.connection().exec_driver_sql(POST_SQL, _parameters(source, step, legs))
    return found.first() is not None


def post_on(cursor: Any, source: Source, step: str, legs: Sequence[Leg]) -> bool:
    """`post` on a DB-API cursor of the caller's transaction (the wallet's hot path,
    services/wallet/ledger.py, which holds the wallet's row lock meanwhile)."""
    cursor.execute(POST_SQL, _parameters(source, step, legs))
    return cursor.fetchone() is not None


def _parameters(source: Source, step: str, legs: Sequence[Leg]) -> tuple[Any, ...]:
    legs = [leg for leg in legs if leg.amount_minor != 0]
    check_balanced(source, step, legs)
    return (
        source.kind.value,
        source.id,
        step,
        utcnow(),
        [leg.account for leg in legs],
        [leg.amount_minor for leg in legs],
        [leg.currency for leg in legs],
        [leg.ledger_entry_id for leg in legs],
    )


def post_many(entries: Sequence[tuple[Source, str, Sequence[Leg]]]) -> int:
    """`post` for many entries at once (a day's fees and payouts), every one checked
    before any is written, then written a few thousand at a time; how many were new (a
    repeat of a step writes nothing)."""
    for source, step, legs in entries:
        check_balanced(source, step, legs)
    posted = 0
    for start in range(0, len(entries), MANY):
        legs_of = {
            (source.kind, source.id, step): [leg for leg in legs if leg.amount_minor != 0]
            for source, step, legs in entries[start : start + MANY]
        }
        now = utcnow()
        # One statement compiled once for every row (SQLAlchemy's insertmanyvalues).
        returned = db.session.execute(
            pg_insert(JournalEntry)
            .on_conflict_do_nothing(index_elements=["source_kind", "source_id", "step"])
            .returning(
                JournalEntry.id, JournalEntry.source_kind, JournalEntry.source_id, JournalEntry.step
            ),
            [
                {"source_kind": k, "source_id": i, "step": step, "created_at": now}
                for k, i, step in legs_of
            ],
        ).all()
        postings = [
            {
                "entry_id": entry_id,
                "account": leg.account,
                "amount_minor": leg.amount_minor,
                "currency": leg.currency,
            }
            for entry_id, kind, source_id, step in returned
            for leg in legs_of[(kind, source_id, step)]
        ]
        if postings:
            db.session.execute(insert(Posting), postings)
        posted += len(returned)
    return posted


def reverse(source: Source, of_step: str, step: str) -> bool:
    """Post the mirror of an entry posted before; False when that entry was never posted
    (a movement older than the journal) or the reversal was posted already. (An entry
    with a wallet's leg is mirrored by the wallet's movement, services/wallet/ledger.py:
    the database refuses a wallet's posting without its ledger entry.)"""
    legs = entries_of(source).get(of_step)
    if not legs:
        return False
    return post(source, step, [Leg(account, -amount, cur) for account, amount, cur in legs])


def check_balanced(source: Source | str, step: str, legs: Sequence[Leg]) -> None:
    """Raise UnbalancedEntryError unless the legs are two or more and net to zero per
    currency (zero legs left out)."""
    legs = [leg for leg in legs if leg.amount_minor != 0]
    totals: dict[str, int] = defaultdict(int)
    for leg in legs:
        totals[leg.currency] += leg.amount_minor
    off = {currency: total for currency, total in totals.items() if total}
    if len(legs) < 2 or off:
        raise UnbalancedEntryError(f"{source} {step}: {len(legs)} legs, off by {off or 'nothing'}")


def balances(account: str | None = None) -> dict[tuple[str, str], int]:
    """Every account's balance per currency (or one account's): the sum of its postings."""
    query = select(Posting.account, Posting.currency, func.sum(Posting.amount_minor)).group_by(
        Posting.account, Posting.currency
    )
    if account is not None:
        query = query.where(Posting.account == account)
    return {(name, currency): int(total) for name, currency, total in db.session.execute(query)}


def trial_balance() -> dict[str, int]:
    """What all accounts add up to per currency: zero in every one, or the books are
    broken (the database refuses an unbalanced entry; this reads it back)."""
    query = select(Posting.currency, func.sum(Posting.amount_minor)).group_by(Posting.currency)
    return {currency: int(total) for currency, total in db.session.execute(query)}


def entries_of(source: Source) -> dict[str, list[tuple[str, int, str]]]:
    """The steps posted for a movement, each as its legs (account, amount, currency)."""
    found = db.session.execute(
        select(JournalEntry.step, Posting.account, Posting.amount_minor, Posting.currency)
        .join(Posting, Posting.entry_id == JournalEntry.id)
        .where(JournalEntry.source_kind == source.kind, JournalEntry.source_id == source.id)
        .order_by(JournalEntry.id, Posting.id)
    )
    steps: dict[str, list[tuple[str, int, str]]] = defaultdict(list)
    for step, account, amount, currency in found:
        steps[step].append((account, int(amount), currency))
    return dict(steps)
