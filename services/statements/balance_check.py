"""Balance against balance: at the end of a reconciled day, for each currency, what the
provider held for us (its balance now, less the net of every transaction it made since)
against the closing balance of our clearing account, less what the items to look at
already explain. What is left is a `balance_differs` item: a booking whose provider item
has gone, a fee booked twice, a posting written past the app (the books' own check).

Our closing balance counts each entry at the provider's time when it is matched to one of
the provider's transactions (so a movement on our side of midnight and on the provider's
other side is in the same day on both), at its own time otherwise. Only days of the last
`RECENT_DAYS` are compared (the provider's balance is now: an older day would mean
reading every transaction since)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from sqlalchemy import case, func, select

from extensions import db
from models import (
    BalanceMatch,
    ItemOutcome,
    JournalEntry,
    Posting,
    ProviderBalanceTxn,
    ReconciliationDay,
    ReconciliationItem,
    SourceKind,
)
from models.journal import Account
from models.types import utcnow
from providers.base import BalanceHolder
from providers.outcomes import ProviderBalance
from resilience.gateway import CallContext
from services.platform.locales import money_text
from services.platform.provider_clients import gateway_for, provider_for
from services.statements import provider_balance
from services.statements.items import AGREEING, DayResult, Item

RECENT_DAYS = 7
# What an item to look at leaves between the provider's balance and ours (per currency):
# the provider's net it has and we booked nothing of, less our clearing posting it lacks.
THEIRS_ONLY = (
    ItemOutcome.MISSING_AT_OURS,
    ItemOutcome.PAYOUT_DIFFERS,
    ItemOutcome.AMOUNT_DIFFERS,
    ItemOutcome.CURRENCY_DIFFERS,
    ItemOutcome.DUPLICATE,
)
OURS_ONLY = (
    ItemOutcome.MISSING_AT_PROVIDER,
    ItemOutcome.VANISHED,  # what we booked of it: its net
    ItemOutcome.AMOUNT_DIFFERS,
    ItemOutcome.CURRENCY_DIFFERS,
)


READS = 3  # the balance and the transactions since, read again when it moved meanwhile


def held_at(provider: str, end: datetime) -> dict[str, int] | None:
    """What the provider held for us at `end`, per currency: its balance now less the net
    of every transaction since, listed between two reads of the balance that agree
    (nothing moved meanwhile). None when it does not say its balance, when the day is not
    recent, when a transaction since cannot be believed or the balance kept moving;
    raises provider_balance.BalanceUnreadable when the provider cannot be asked now."""
    client = provider_for(provider)
    if not isinstance(client, BalanceHolder) or end < utcnow() - timedelta(days=RECENT_DAYS):
        return None
    gateway = gateway_for(provider)

    def balance() -> dict[str, int]:
        held = gateway.call(
            CallContext("balance"), client.balance_now, is_failure=lambda answer: answer is None
        )
        if not isinstance(held, ProviderBalance):
            raise provider_balance.BalanceUnreadable(f"{provider} balance: no answer")
        return held.held

    for _ in range(READS):
        before = balance()
        since = provider_balance.day_transactions(provider, end, utcnow() + timedelta(days=1))
        if balance() != before:
            continue
        if any(txn.problem for txn in since):
            return None
        theirs = defaultdict(int, before)
        for txn in {t.txn_id: t for t in since}.values():
            theirs[txn.currency] -= txn.amount_minor - txn.fee_minor
        return dict(theirs)
    return None


def compare(
    provider: str, end: datetime, result: DayResult, held: dict[str, int] | None
) -> list[Item]:
    """The day's `balance_differs` items, against what the provider held at its end
    (`held_at`; none when that is None or the day has an unreadable item)."""
    if held is None or result.count(ItemOutcome.UNREADABLE):
        return []
    theirs = defaultdict(int, held)
    ours = _ours_at(provider, end)
    explained = _explained(provider, result)
    items = []
    for currency in sorted(set(theirs) | set(ours)):
        left = theirs[currency] - ours.get(currency, 0) - explained.get(currency, 0)
        if left == 0:
            continue
        detail = (
            f"{provider} held {money_text(theirs[currency], currency)} at the day's end, "
            f"clearing:{provider} {money_text(ours.get(currency, 0), currency)}: "
            f"{money_text(left, currency)} no item explains"
        )
        items.append(
            Item(
                ItemOutcome.BALANCE_DIFFERS,
                detail[:200],
                theirs=theirs[currency],
                ours=ours.get(currency, 0),
                currency=currency,
            )
        )
    return items


def _ours_at(provider: str, end: datetime) -> dict[str, int]:
    """The clearing account's balance at `end`, each entry at its provider's time when
    matched (or when it is the provider's own: a fee, a payout) and at its own time else."""
    theirs_of = func.coalesce(
        BalanceMatch.provider_txn_id,
        case((JournalEntry.source_kind == SourceKind.BALANCE, JournalEntry.source_id)),
    )
    when = func.coalesce(ProviderBalanceTxn.created_at, JournalEntry.created_at)
    rows = db.session.execute(
        select(Posting.currency, func.sum(Posting.amount_minor))
        .join(JournalEntry, JournalEntry.id == Posting.entry_id)
        .outerjoin(BalanceMatch, BalanceMatch.entry_id == JournalEntry.id)
        .outerjoin(ProviderBalanceTxn, ProviderBalanceTxn.id == theirs_of)
        .where(Posting.account == Account.clearing(provider), when < end)
        .group_by(Posting.currency)
    )
    return {currency: int(total) for currency, total in rows}


def _explained(provider: str, result: DayResult) -> dict[str, int]:
    """What the items to look at of this day and of every stored day before it leave
    between the two balances (an item resolved since, its entry or transaction matched
    now, leaves nothing)."""
    gap: dict[str, int] = defaultdict(int)
    repeated = {i.txn_row_id for i in result.items if i.outcome in AGREEING}
    for item in result.items:
        _add(
            gap,
            item.outcome,
            item.txn.amount_minor - item.txn.fee_minor if item.txn else None,
            item.txn.currency if item.txn else None,
            item.ours,
            item.currency,
            item.txn_row_id in repeated,
        )
    matched_entry = select(BalanceMatch.id).where(
        BalanceMatch.entry_id == ReconciliationItem.entry_id
    )
    matched_txn = select(BalanceMatch.id).where(
        BalanceMatch.provider_txn_id == ReconciliationItem.provider_txn_id
    )
    earlier = db.session.execute(
        select(
            ReconciliationItem.outcome,
            ProviderBalanceTxn.amount_minor - ProviderBalanceTxn.fee_minor,
            ProviderBalanceTxn.currency,
            ReconciliationItem.ours_minor,
            ReconciliationItem.currency,
        )
        .join(ReconciliationDay, ReconciliationDay.id == ReconciliationItem.day_id)
        .outerjoin(ProviderBalanceTxn, ProviderBalanceTxn.id == ReconciliationItem.provider_txn_id)
        .where(
            ReconciliationDay.provider == provider,
            ReconciliationDay.day < result.day,
            ReconciliationItem.outcome.not_in([*AGREEING, ItemOutcome.BALANCE_DIFFERS]),
            ~matched_entry.exists(),
            ~matched_txn.exists(),
        )
    )
    for outcome, net, their_currency, ours, our_currency in earlier:
        _add(gap, outcome, net, their_currency, ours, our_currency, False)
    return gap


def _add(
    gap: dict[str, int],
    outcome: ItemOutcome,
    net: int | None,
    their_currency: str | None,
    ours: int | None,
    our_currency: str | None,
    is_repeat: bool,
) -> None:
    if outcome in THEIRS_ONLY and net is not None and their_currency and not is_repeat:
        gap[their_currency] += net
    if outcome in OURS_ONLY and ours is not None and our_currency:
        gap[our_currency] -= ours
