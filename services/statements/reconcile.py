"""The daily reconciliation: every balance transaction the provider made on a day
matched to our books, and every entry of ours on that day found at the provider.

Each of the provider's transactions is one item:
- a charge matches the success entry of our payment with that PaymentIntent, a refund
  the success entry of our refund with that id, a refund failure its `failed` entry, a
  dispute's withdrawal and reinstatement its `withdrawn:<n>` and `reinstated:<n>` entries:
  `matched`, or `amount_differs` / `currency_differs` (the clearing account's posting
  against the provider's amount), or `missing_at_ours` (no such payment or refund: a
  charge made outside the shop; or ours has no entry yet);
- the provider's fee on a matched one is booked from its record (fees:<p> against
  clearing:<p>, the entry named by the balance transaction): a fee is the provider's to
  say; a payout (clearing:<p> to bank:<p>) and a payout that failed (back) too, as
  `booked`, once its contents are read and sum to its amount and the payout's events
  (services/payouts/) said that amount too (else `payout_differs`).
  Nothing is booked for an item that does not agree: a mismatch never moves money;
- a fee that is an item of its own (Braintree's fee report: a transaction's fee, on the
  day it was disbursed) is `booked` the same way;
- anything else (an adjustment, a fee we did not expect) is `missing_at_ours`, named by
  its type and category;
- an item the provider's answer did not let us believe is `unreadable`.
Then every entry of ours that moved the clearing account on that day and that no item
of any day matched is `missing_at_provider`. A day with any item other than matched or
booked is `unreconciled`, and the on-call admins are alerted.

Reconciling a day again reads it again and replaces its items (the bookings are
UNIQUE by their source, so nothing posts twice). Our side is read in batches
(services/statements/ours.py), so a day's cost follows its size."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import delete, func, insert, select

from extensions import db
from models import (
    Account,
    AlertKind,
    DayStatus,
    ItemOutcome,
    JournalEntry,
    Posting,
    ProviderPayout,
    ReconciliationDay,
    ReconciliationItem,
    Source,
    SourceKind,
)
from models.types import utcnow
from providers.outcomes import BalanceTxn
from services.backoffice.alerts import raise_alert
from services.books import journal
from services.payouts import reads as payouts
from services.platform.locales import money_text
from services.statements import (
    balance_check,
    claims,
    closing,
    conversions,
    corrections,
    ours,
    provider_balance,
)
from services.statements.items import AGREEING, WHAT_TO_DO, DayResult, Item, item_of

__all__ = ["AGREEING", "BALANCE_PROVIDERS", "DayResult", "Item", "reconcile"]

# The providers whose balance the books are reconciled against (their client reads it).
BALANCE_PROVIDERS = ("stripe", "braintree")
OUR_MOVEMENTS = tuple(kind.source_kind for kind in ours.KINDS.values())
BOOKED_TYPES = corrections.BOOKED_TYPES
MATCHED_ENTRY = (
    ItemOutcome.MATCHED,
    ItemOutcome.AMOUNT_DIFFERS,
    ItemOutcome.CURRENCY_DIFFERS,
    ItemOutcome.VANISHED,  # its entry is named by the transaction it was matched to
)
ALERTS_PER_RUN = 50  # one alert per discrepancy; past this many in a run, one for the rest


def day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time.min, UTC)
    return start, start + timedelta(days=1)


def is_reconciled(provider: str, day: date) -> bool:
    status = db.session.scalar(
        select(ReconciliationDay.status).where(
            ReconciliationDay.provider == provider, ReconciliationDay.day == day
        )
    )
    return status == DayStatus.RECONCILED


def reconcile(provider: str, day: date) -> DayResult:
    """Reconcile the provider's day (UTC) and store the result; raises
    provider_balance.BalanceUnreadable when the provider cannot be asked now, and
    closing.DayClosed when the day is closed (nothing is stored then). Commits."""
    closing.refuse_if_closed(provider, day)
    start, end = day_bounds(day)
    read = provider_balance.day_transactions(provider, start, end)
    listed, repeats = claims.listed_once([txn for txn in read if txn.problem is None])
    contents = {
        txn.source_id: provider_balance.payout_transactions(provider, txn.source_id)
        for txn in listed
        if txn.type == "payout"
    }
    held = balance_check.held_at(provider, end)
    # One reconciliation of a provider's day at a time (a scheduled run and a person's).
    db.session.execute(
        select(func.pg_advisory_xact_lock(func.hashtext(f"books:reconcile:{provider}:{day}")))
    )
    closing.refuse_if_closed(provider, day)  # closed while it was read
    row_ids = provider_balance.record(provider, listed)
    found_again = corrections.read_again(listed, row_ids)
    mine = ours.ours_for(provider, listed)
    result = DayResult(provider, day)
    result.items = [
        Item(ItemOutcome.UNREADABLE, f"{txn.txn_id}: {txn.problem}")
        for txn in read
        if txn.problem is not None
    ]
    events = payouts.told(provider, contents)
    for txn in listed:
        item = _judge(provider, txn, mine.get(txn.txn_id), contents.get(txn.source_id), listed)
        if item.outcome == ItemOutcome.BOOKED and txn.type == "payout":
            item = _as_told(item, txn, events.get(txn.source_id))
        item.txn_row_id = row_ids[txn.txn_id]
        result.items.append(item)
    claims.claim_entries(result.items)
    for item in result.items:
        is_payout = item.txn is not None and item.txn.type == "payout"
        paid_out = contents.get(item.txn.source_id) if item.txn and is_payout else None
        if item.outcome == ItemOutcome.BOOKED and item.txn and paid_out is not None:
            inside = [t for t in paid_out if t.txn_id != item.txn.txn_id]
            claims.claim_contents(item, provider_balance.record(provider, inside))
    for item in repeats:
        item.txn_row_id = row_ids[item.key]
    result.items += repeats
    # Only what agrees moves money in the books: a mismatch never does.
    agreed = [i.txn for i in result.items if i.outcome in AGREEING and i.txn is not None]
    _book(provider, agreed, row_ids)
    conversions.book(provider, [i for i in result.items if i.outcome in AGREEING])
    result.items += corrections.adjust(provider, found_again, {t.txn_id for t in agreed})
    result.items += claims.vanished(provider, start, end, listed)
    result.items += _ours_missing(provider, start, end, result)
    result.items += balance_check.compare(provider, end, result, held)
    _store(result)
    db.session.commit()
    return result


def _book(provider: str, txns: list[BalanceTxn], row_ids: dict[str, int]) -> None:
    """What the provider's record alone decides: its fee, a payout and its failure (each
    entry named by the balance transaction: posted once, however often the day is read)."""
    clearing = Account.clearing(provider)
    entries = []
    for txn in txns:
        source, currency = Source(SourceKind.BALANCE, row_ids[txn.txn_id]), txn.currency
        if txn.fee_minor:
            fees = Account.fees(provider)
            legs = [
                journal.Leg(fees, txn.fee_minor, currency),
                journal.Leg(clearing, -txn.fee_minor, currency),
            ]
            entries.append((source, "fee", legs))
        if txn.type in BOOKED_TYPES:
            bank = Account.bank(provider)
            moved = -txn.amount_minor  # a payout's amount is negative: what left the balance
            legs = [journal.Leg(bank, moved, currency), journal.Leg(clearing, -moved, currency)]
            entries.append((source, txn.type, legs))
    journal.post_many(entries)


def _judge(
    provider: str,
    txn: BalanceTxn,
    mine: ours.Ours | None,
    contents: list[BalanceTxn] | None,
    listed: list[BalanceTxn],
) -> Item:
    if ours.kind_of(txn) is not None:
        return _against(txn, mine)
    if txn.type == "payout" and contents is not None:
        return payout_item(txn, contents)
    if txn.type == "payout":  # made by hand: paid from the available balance
        detail = f"payout {txn.source_id} asked for by hand, paid from the available balance"
        return item_of(ItemOutcome.BOOKED, detail, txn)
    if txn.type == "payout_failure":
        return claims.judge_failure(provider, txn, listed)
    if txn.type == "fee":  # a fee of its own (Braintree's fee report): the provider's to say
        return item_of(ItemOutcome.BOOKED, f"fee of transaction {txn.source_id}", txn)
    detail = f"{txn.type} ({txn.category}) {txn.source_id}: not in our books"
    return item_of(ItemOutcome.MISSING_AT_OURS, detail, txn)


def payout_item(txn: BalanceTxn, contents: list[BalanceTxn]) -> Item:
    """A payout, booked, when what it contains (its own transaction aside) sums to what
    it paid out; else `payout_differs`, with the sum."""
    inside = sum(t.amount_minor - t.fee_minor for t in contents if t.type != "payout")
    if inside != -txn.amount_minor:
        cur = txn.currency
        detail = (
            f"payout {txn.source_id} of {money_text(-txn.amount_minor, cur)}: "
            f"its contents sum to {money_text(inside, cur)}"
        )
        return item_of(ItemOutcome.PAYOUT_DIFFERS, detail, txn, ours=inside)
    return item_of(ItemOutcome.BOOKED, f"payout {txn.source_id}: {len(contents) - 1} inside", txn)


def _as_told(item: Item, txn: BalanceTxn, told: ProviderPayout | None) -> Item:
    """A payout's balance transaction against what its events said (`payout.paid`...):
    another amount or currency is `payout_differs` (and books nothing)."""
    if told is None or (told.amount_minor, told.currency) == (-txn.amount_minor, txn.currency):
        return item
    detail = (
        f"payout {txn.source_id} of {money_text(-txn.amount_minor, txn.currency)}: its events "
        f"said {money_text(told.amount_minor, told.currency)}"
    )
    return item_of(ItemOutcome.PAYOUT_DIFFERS, detail, txn, ours=told.amount_minor)


def _against(txn: BalanceTxn, mine: ours.Ours | None) -> Item:
    what = f"{txn.type} {txn.source_id}"
    if mine is None:
        ref = f" ({txn.payment_ref})" if txn.payment_ref else ""
        return item_of(ItemOutcome.MISSING_AT_OURS, f"{what}{ref}: no movement of ours", txn)
    if mine.entry_id is None:
        detail = f"{what}: {mine.label} is {mine.status}, not in our books"
        return item_of(ItemOutcome.MISSING_AT_OURS, detail, txn)
    said = {"ours": mine.amount, "entry_id": mine.entry_id}
    if mine.currency != txn.currency and mine.amount is not None and mine.currency:
        if conversions.agrees(txn, mine.amount, mine.currency):
            item = item_of(
                ItemOutcome.MATCHED,
                f"{what}: {mine.label}, {conversions.said(txn, mine.amount, mine.currency)}",
                txn,
                **said,
            )
            item.converted = (mine.amount, mine.currency)
            return item
        detail = f"{what}: {mine.label} in {mine.currency}, theirs in {txn.currency}"
        if txn.exchange_rate is not None:
            detail += (
                f" at {txn.exchange_rate}: {conversions.said(txn, mine.amount, mine.currency)}"
            )
        return item_of(ItemOutcome.CURRENCY_DIFFERS, detail, txn, **said)
    if mine.amount != txn.amount_minor:
        moved = "nothing" if mine.amount is None else money_text(mine.amount, txn.currency)
        theirs = money_text(txn.amount_minor, txn.currency)
        detail = f"{what}: {mine.label} moved {moved}, theirs {theirs}"
        return item_of(ItemOutcome.AMOUNT_DIFFERS, detail, txn, **said)
    return item_of(ItemOutcome.MATCHED, f"{what}: {mine.label}", txn, **said)


def _ours_missing(provider: str, start: datetime, end: datetime, result: DayResult) -> list[Item]:
    """Our entries of the day that moved the clearing account and that no item matched:
    this day's, or another day's (a movement near midnight can be on the provider's other
    side of it; a test clock). Each entry is looked up by the items' entry index, so the
    cost follows the day, not the history."""
    matched_here = {item.entry_id for item in result.items if item.outcome in MATCHED_ENTRY}
    matched_elsewhere = (
        select(ReconciliationItem.id)
        .join(ReconciliationDay, ReconciliationDay.id == ReconciliationItem.day_id)
        .where(
            ReconciliationItem.entry_id == JournalEntry.id,
            ReconciliationItem.outcome.in_(MATCHED_ENTRY),
            ReconciliationDay.provider == provider,
            ReconciliationDay.day != result.day,
        )
        .exists()
    )
    found = db.session.execute(
        select(
            JournalEntry.id,
            JournalEntry.source_kind,
            JournalEntry.source_id,
            JournalEntry.step,
            Posting.amount_minor,
            Posting.currency,
        )
        .join(Posting, Posting.entry_id == JournalEntry.id)
        .where(
            JournalEntry.created_at >= start,
            JournalEntry.created_at < end,
            JournalEntry.source_kind.in_(OUR_MOVEMENTS),
            Posting.account == Account.clearing(provider),
            ~matched_elsewhere,
        )
        .order_by(JournalEntry.id)
    )
    unmatched = [row for row in found if row.id not in matched_here]
    # A movement undone before it reached the provider (a top-up's refund taken from the
    # wallet, then refused by the provider's API) moved the clearing account out and back
    # on our side alone: nothing of it is missing there.
    net: dict[tuple[Any, int, str], int] = defaultdict(int)
    for _, kind, source_id, _, amount, currency in unmatched:
        net[(kind, source_id, currency)] += int(amount)
    return [
        Item(
            ItemOutcome.MISSING_AT_PROVIDER,
            f"{kind.value} {source_id} {step}: not in {provider}'s balance",
            entry_id=entry_id,
            ours=int(amount),
            currency=currency,
        )
        for entry_id, kind, source_id, step, amount, currency in unmatched
        if net[(kind, source_id, currency)] != 0
    ]


def _store(result: DayResult) -> None:
    """The day's row (made or updated) and its items, replacing an earlier run's; the
    on-call admins alerted when the day does not reconcile."""
    day = db.session.scalars(
        select(ReconciliationDay)
        .where(ReconciliationDay.provider == result.provider, ReconciliationDay.day == result.day)
        .with_for_update()
    ).first()
    if day is None:
        day = ReconciliationDay(provider=result.provider, day=result.day)
        db.session.add(day)
    day.status = result.status
    day.matched = result.count(*AGREEING)
    day.unmatched = len(result.items) - day.matched
    day.reconciled_at = utcnow()
    db.session.flush()
    db.session.execute(delete(ReconciliationItem).where(ReconciliationItem.day_id == day.id))
    for start in range(0, len(result.items), ours.CHUNK):  # a chunk at a time (memory)
        rows = [
            {
                "day_id": day.id,
                "outcome": item.outcome,
                "provider_txn_id": item.txn_row_id,
                "entry_id": item.entry_id,
                "theirs_minor": item.theirs,
                "ours_minor": item.ours,
                "currency": item.currency,
                "detail": item.detail[:200],
            }
            for item in result.items[start : start + ours.CHUNK]
        ]
        db.session.execute(insert(ReconciliationItem), rows)
    _alert(result)


def _alert(result: DayResult) -> None:
    """One alert per discrepancy, keyed by its item (a second on the same day alerts too;
    a run that finds the same again alerts nothing), saying what to do; a payout the bank
    refused alerts though it is booked (Stripe documents that a paid payout can fail)."""
    found = [i for i in result.items if i.outcome not in AGREEING]
    found += [
        i
        for i in result.items
        if i.outcome == ItemOutcome.BOOKED and i.txn and i.txn.type == "payout_failure"
    ]
    where = f"{result.provider} {result.day}"
    for item in found[:ALERTS_PER_RUN]:
        todo = WHAT_TO_DO.get(item.outcome, "check the bank account the payout went to")
        raise_alert(
            AlertKind.BOOKS_UNRECONCILED,
            f"books:{result.provider}:{result.day}:{item.outcome.value}:{item.key}",
            f"The books of {where}: {item.outcome.value}: {item.detail}. What to do: {todo} "
            "(Books page).",
        )
    if len(found) > ALERTS_PER_RUN:
        raise_alert(
            AlertKind.BOOKS_UNRECONCILED,
            f"books:{result.provider}:{result.day}:more:{len(found)}",
            f"The books of {where}: {len(found) - ALERTS_PER_RUN} more items to look at "
            "than were alerted one by one (Books page).",
        )
