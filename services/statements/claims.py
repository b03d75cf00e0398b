"""Exactly once, both ways: each of the provider's balance transactions is matched to at
most one of our entries and each entry to at most one transaction (balance_matches,
UNIQUE both ways); each transaction is paid out by at most one payout (payout_contents,
UNIQUE); a payout's failure is matched to its payout before it is booked. A second
claimant is a named item (`duplicate`, `payout_differs`) that books nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import String, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from extensions import db
from models import (
    BalanceMatch,
    ItemOutcome,
    PayoutContent,
    PayoutStatus,
    ProviderBalanceTxn,
    ProviderPayout,
)
from providers.outcomes import BalanceTxn
from services.platform.locales import money_text
from services.statements.items import Item, item_of
from services.statements.ours import CHUNK, among

EARLIEST = datetime.min.replace(tzinfo=UTC)


def listed_once(read: list[BalanceTxn]) -> tuple[list[BalanceTxn], list[Item]]:
    """The listing with each id once, and each repeat as a `duplicate` (the provider's
    list said the same transaction twice: it is one transaction, matched and booked once)."""
    seen: set[str] = set()
    once, repeats = [], []
    for txn in read:
        if txn.txn_id in seen:
            repeats.append(item_of(ItemOutcome.DUPLICATE, f"{txn.txn_id}: listed twice", txn))
            continue
        seen.add(txn.txn_id)
        once.append(txn)
    return once, repeats


def _pairs(query_of: Callable[[list[int]], Any], values: Iterable[int]) -> list[tuple[int, int]]:
    """The rows (two ids each) a query reads for the values, a chunk at a time."""
    listed = sorted(set(values))
    found: list[tuple[int, int]] = []
    for start in range(0, len(listed), CHUNK):
        found += [(a, b) for a, b in db.session.execute(query_of(listed[start : start + CHUNK]))]
    return found


def claim_entries(items: list[Item]) -> None:
    """Each matched item claims its entry: the entry's first claimant (stored, else the
    earliest of the day) keeps it; a later one is a `duplicate` naming the first. The new
    claims are stored in the caller's transaction."""
    matched = [i for i in items if i.outcome == ItemOutcome.MATCHED and i.txn_row_id]
    if not matched:
        return
    by_entry = dict(
        _pairs(
            lambda chunk: select(BalanceMatch.entry_id, BalanceMatch.provider_txn_id).where(
                among(BalanceMatch.entry_id, chunk)
            ),
            (i.entry_id for i in matched if i.entry_id),
        )
    )
    by_txn = dict(
        _pairs(
            lambda chunk: select(BalanceMatch.provider_txn_id, BalanceMatch.entry_id).where(
                among(BalanceMatch.provider_txn_id, chunk)
            ),
            (i.txn_row_id for i in matched if i.txn_row_id),
        )
    )
    new: list[Item] = []
    for item in sorted(matched, key=_age):
        assert item.entry_id is not None and item.txn_row_id is not None
        holder, before = by_entry.get(item.entry_id), by_txn.get(item.txn_row_id)
        if holder is None and before is None:
            by_entry[item.entry_id], by_txn[item.txn_row_id] = item.txn_row_id, item.entry_id
            new.append(item)
        elif holder is not None and holder != item.txn_row_id:
            _second(item, f"its entry was matched to {_txn_name(holder)} already")
        elif before is not None and before != item.entry_id:
            _second(item, f"it was matched to entry {before} before")
    for start in range(0, len(new), CHUNK):
        chunk = new[start : start + CHUNK]
        stored = db.session.execute(
            pg_insert(BalanceMatch)
            .on_conflict_do_nothing()
            .returning(BalanceMatch.provider_txn_id),
            [{"provider_txn_id": i.txn_row_id, "entry_id": i.entry_id} for i in chunk],
        ).scalars()
        kept = set(stored)
        for item in chunk:  # another reconciliation claimed it meanwhile
            if item.txn_row_id not in kept:
                _second(item, "its entry was claimed by another reconciliation meanwhile")


def _age(item: Item) -> tuple[datetime, str]:
    txn = item.txn
    return (txn.created_at or EARLIEST, txn.txn_id) if txn else (EARLIEST, "")


def _second(item: Item, why: str) -> None:
    assert item.txn is not None
    item.outcome = ItemOutcome.DUPLICATE
    item.detail = f"{item.txn.type} {item.txn.source_id} ({item.txn.txn_id}): {why}"[:200]


def _txn_name(row_id: int) -> str:
    return str(db.session.get(ProviderBalanceTxn, row_id).txn_id)  # type: ignore[union-attr]


def claim_contents(item: Item, inside: dict[str, int]) -> None:
    """A booked payout claims what it paid out (`inside`: each transaction's row id by
    the provider's id, its own left out): a transaction another payout paid out already
    makes it `payout_differs`, naming both (and it books nothing)."""
    assert item.txn is not None and item.txn_row_id is not None
    holders = dict(
        _pairs(
            lambda chunk: select(PayoutContent.txn_id, PayoutContent.payout_txn_id).where(
                among(PayoutContent.txn_id, chunk)
            ),
            inside.values(),
        )
    )
    for txn_id, row_id in sorted(inside.items()):
        holder = holders.get(row_id)
        if holder is not None and holder != item.txn_row_id:
            other = db.session.get(ProviderBalanceTxn, holder)
            paid_by = other.source_id if other else holder
            item.outcome = ItemOutcome.PAYOUT_DIFFERS
            item.detail = f"payout {item.txn.source_id}: {txn_id} was paid out by {paid_by}"[:200]
            return
    rows = [
        {"payout_txn_id": item.txn_row_id, "txn_id": row_id}
        for row_id in inside.values()
        if holders.get(row_id) is None
    ]
    for start in range(0, len(rows), CHUNK):
        db.session.execute(
            pg_insert(PayoutContent).on_conflict_do_nothing(), rows[start : start + CHUNK]
        )


def judge_failure(provider: str, txn: BalanceTxn, read: list[BalanceTxn]) -> Item:
    """A payout's failure, matched to its payout before it is booked: the payout's own
    transaction (read today or before) or its events must be known, say the same amount
    (back) and currency, and its events, when there are any, must say it failed."""
    payout_id = txn.source_id
    what = f"payout {payout_id} failed"
    paid = [t for t in read if t.type == "payout" and t.source_id == payout_id]
    if not paid:
        paid = [_stored(row) for row in _stored_payouts(provider, payout_id)]
    told = db.session.scalars(
        select(ProviderPayout).where(
            ProviderPayout.provider == provider, ProviderPayout.payout_id == payout_id
        )
    ).first()
    back = money_text(txn.amount_minor, txn.currency)
    if not paid and told is None:
        return item_of(ItemOutcome.PAYOUT_DIFFERS, f"{what}: no such payout of ours", txn)
    for payout in paid:
        if (-payout.amount_minor, payout.currency) != (txn.amount_minor, txn.currency):
            sent = money_text(-payout.amount_minor, payout.currency)
            detail = f"{what}: {back} back for a payout of {sent}"
            return item_of(ItemOutcome.PAYOUT_DIFFERS, detail, txn, ours=-payout.amount_minor)
    if told is not None:
        if (told.amount_minor, told.currency) != (txn.amount_minor, txn.currency):
            sent = money_text(told.amount_minor, told.currency)
            detail = f"{what}: {back} back, its events said {sent}"
            return item_of(ItemOutcome.PAYOUT_DIFFERS, detail, txn, ours=told.amount_minor)
        if told.status != PayoutStatus.FAILED:
            detail = f"{what}: its events say {told.status.value}"
            return item_of(ItemOutcome.PAYOUT_DIFFERS, detail, txn)
    return item_of(ItemOutcome.BOOKED, f"{what}: its money back ({back})", txn)


def _stored_payouts(provider: str, payout_id: str) -> list[ProviderBalanceTxn]:
    return list(
        db.session.scalars(
            select(ProviderBalanceTxn).where(
                ProviderBalanceTxn.provider == provider,
                ProviderBalanceTxn.type == "payout",
                among(ProviderBalanceTxn.source_id, [payout_id], String),
            )
        )
    )


def _stored(row: ProviderBalanceTxn) -> BalanceTxn:
    return BalanceTxn(
        row.txn_id,
        row.type,
        row.category,
        row.source_id,
        row.payment_ref,
        row.amount_minor,
        row.fee_minor,
        row.currency,
        row.created_at,
        exchange_rate=row.exchange_rate,
    )


def vanished(provider: str, start: datetime, end: datetime, listed: list[BalanceTxn]) -> list[Item]:
    """The transactions read before on the day that its listing no longer has: each
    `vanished`, with the entry it was matched to (our booking stands until a person
    reverses it) and its net as what we booked of it. Only the day's ids are read (a day
    of 100,000 is not loaded whole), then the rows of those gone."""
    ids = {txn.txn_id for txn in listed}
    stored = db.session.execute(
        select(ProviderBalanceTxn.id, ProviderBalanceTxn.txn_id).where(
            ProviderBalanceTxn.provider == provider,
            ProviderBalanceTxn.created_at >= start,
            ProviderBalanceTxn.created_at < end,
        )
    )
    gone = [row_id for row_id, txn_id in stored if txn_id not in ids]
    if not gone:
        return []
    rows = db.session.execute(
        select(ProviderBalanceTxn, BalanceMatch.entry_id)
        .outerjoin(BalanceMatch, BalanceMatch.provider_txn_id == ProviderBalanceTxn.id)
        .where(among(ProviderBalanceTxn.id, gone))
        .order_by(ProviderBalanceTxn.id)
    )
    items = []
    for row, entry_id in rows:
        detail = f"{row.type} {row.source_id} ({row.txn_id}): read before, no longer listed"
        item = item_of(ItemOutcome.VANISHED, detail, _stored(row), entry_id=entry_id)
        item.ours, item.txn_row_id = row.amount_minor - row.fee_minor, row.id
        items.append(item)
    return items
