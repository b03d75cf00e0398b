"""A provider's transaction read again with another amount or fee: the new read is kept
beside the first (provider_balance_corrections: the first read stays as evidence), and
what the books hold for it is adjusted to the new read by an entry on the open day
(`corrected:<n>`, named by the transaction), named as a `corrected` item."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from extensions import db
from models import (
    Account,
    BalanceCorrection,
    ItemOutcome,
    JournalEntry,
    Posting,
    ProviderBalanceTxn,
    Source,
    SourceKind,
)
from models.types import utcnow
from providers.outcomes import BalanceTxn
from services.books import journal
from services.platform.locales import money_text
from services.statements.items import Item, item_of
from services.statements.ours import CHUNK, among

BOOKED_TYPES = ("payout", "payout_failure")  # the bank moves by their amount


@dataclass(frozen=True)
class Correction:
    txn: BalanceTxn
    row_id: int
    n: int
    amount_before: int
    fee_before: int


def read_again(txns: list[BalanceTxn], row_ids: dict[str, int]) -> list[Correction]:
    """The transactions whose amount or fee differ from what was last read of them (the
    first read, or its newest correction), each kept as a new correction."""
    wanted = {row_ids[t.txn_id]: t for t in txns if t.txn_id in row_ids}
    last: dict[int, tuple[int, int, int]] = {}  # row id: (n, amount, fee)
    listed = sorted(wanted)
    for start in range(0, len(listed), CHUNK):
        chunk = listed[start : start + CHUNK]
        first = select(
            ProviderBalanceTxn.id, ProviderBalanceTxn.amount_minor, ProviderBalanceTxn.fee_minor
        ).where(among(ProviderBalanceTxn.id, chunk))
        for row_id, amount, fee in db.session.execute(first):
            last[row_id] = (0, int(amount), int(fee))
        newest = (
            select(
                BalanceCorrection.provider_txn_id,
                BalanceCorrection.n,
                BalanceCorrection.amount_minor,
                BalanceCorrection.fee_minor,
            )
            .where(among(BalanceCorrection.provider_txn_id, chunk))
            .order_by(BalanceCorrection.provider_txn_id, BalanceCorrection.n)
        )
        for row_id, n, amount, fee in db.session.execute(newest):
            last[row_id] = (int(n), int(amount), int(fee))
    found = [
        Correction(txn, row_id, last[row_id][0] + 1, last[row_id][1], last[row_id][2])
        for row_id, txn in wanted.items()
        if (txn.amount_minor, txn.fee_minor) != last[row_id][1:]
    ]
    if found:
        now = utcnow()
        db.session.execute(
            pg_insert(BalanceCorrection).on_conflict_do_nothing(),
            [
                {
                    "provider_txn_id": c.row_id,
                    "n": c.n,
                    "amount_minor": c.txn.amount_minor,
                    "fee_minor": c.txn.fee_minor,
                    "read_at": now,
                }
                for c in found
            ],
        )
    return found


def adjust(provider: str, corrections: list[Correction], agreed: set[str]) -> list[Item]:
    """Post, for each correction of a transaction whose item agrees, what the books must
    add so that its fee (and a payout's bank leg) says the new read; each correction a
    `corrected` item (an item that does not agree is named as such already, and books
    nothing)."""
    booked = _booked(provider, [c.row_id for c in corrections])
    items = []
    for c in corrections:
        txn, cur = c.txn, c.txn.currency
        fees_now, bank_now = booked.get(c.row_id, (0, 0))
        fee_delta = bank_delta = 0
        if txn.txn_id in agreed:
            fee_delta = txn.fee_minor - fees_now
            bank_delta = -txn.amount_minor - bank_now if txn.type in BOOKED_TYPES else 0
        legs = [
            journal.Leg(Account.fees(provider), fee_delta, cur),
            journal.Leg(Account.bank(provider), bank_delta, cur),
            journal.Leg(Account.clearing(provider), -(fee_delta + bank_delta), cur),
        ]
        adjusted = fee_delta or bank_delta
        if adjusted:
            journal.post(Source(SourceKind.BALANCE, c.row_id), f"corrected:{c.n}", legs)
        posted = money_text(fee_delta + bank_delta, cur) + " adjusted" if adjusted else "none"
        detail = (
            f"{txn.txn_id} read again: {_said(txn.amount_minor, txn.fee_minor, cur)}, first "
            f"{_said(c.amount_before, c.fee_before, cur)}; {posted}"
        )
        items.append(item_of(ItemOutcome.CORRECTED, detail, txn, ours=c.amount_before))
    return items


def _said(amount: int, fee: int, currency: str) -> str:
    return f"{money_text(amount, currency)} fee {money_text(fee, currency)}"


def _booked(provider: str, row_ids: list[int]) -> dict[int, tuple[int, int]]:
    """What the books hold for each transaction: (its fees, its bank leg)."""
    if not row_ids:
        return {}
    accounts = {Account.fees(provider): 0, Account.bank(provider): 1}
    found: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    rows = db.session.execute(
        select(JournalEntry.source_id, Posting.account, func.sum(Posting.amount_minor))
        .join(Posting, Posting.entry_id == JournalEntry.id)
        .where(
            JournalEntry.source_kind == SourceKind.BALANCE,
            among(JournalEntry.source_id, sorted(set(row_ids))),
            Posting.account.in_(list(accounts)),
        )
        .group_by(JournalEntry.source_id, Posting.account)
    )
    for source_id, account, total in rows:
        found[int(source_id)][accounts[account]] = int(total)
    return {row_id: (sums[0], sums[1]) for row_id, sums in found.items()}
