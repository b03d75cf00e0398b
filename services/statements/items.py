"""A day's reconciliation as items (services/statements/reconcile.py): what each is, and
what the operator does about it (docs/books.md has the same table)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from models import DayStatus, ItemOutcome
from providers.outcomes import BalanceTxn

AGREEING = (ItemOutcome.MATCHED, ItemOutcome.BOOKED)
# What to do about each outcome that is not agreeing (the alert says it).
WHAT_TO_DO = {
    ItemOutcome.MISSING_AT_OURS: "a movement of ours not final yet: wait; made outside the "
    "shop: record it by hand or refund it; an adjustment: ask the provider",
    ItemOutcome.MISSING_AT_PROVIDER: "near midnight: reconcile the next day; otherwise look the "
    "movement up in the provider's dashboard",
    ItemOutcome.AMOUNT_DIFFERS: "look at the movement's provider calls before anything else",
    ItemOutcome.CURRENCY_DIFFERS: "look at the movement's provider calls before anything else",
    ItemOutcome.PAYOUT_DIFFERS: "ask the provider: its payout report and the payout's events",
    ItemOutcome.UNREADABLE: "ask the provider; nothing was booked from it",
    ItemOutcome.DUPLICATE: "ask the provider which one is real; nothing was booked for this one",
    ItemOutcome.CORRECTED: "the difference was posted as an adjustment on the open day: check "
    "it against the provider's reports",
    ItemOutcome.VANISHED: "ask the provider why its record is gone; our booking stands until "
    "a person reverses it",
    ItemOutcome.BALANCE_DIFFERS: "our clearing account and the provider's balance part: look "
    "for bookings without a provider item (the day's other items first)",
}


@dataclass(slots=True)
class Item:
    outcome: ItemOutcome
    detail: str
    txn: BalanceTxn | None = None
    txn_row_id: int | None = None  # provider_balance_transactions.id
    entry_id: int | None = None
    theirs: int | None = None
    ours: int | None = None
    currency: str | None = None
    # Matched across currencies at the provider's rate: ours (amount, currency), which
    # the books convert into the provider's currency (fx:<provider>).
    converted: tuple[int, str] | None = None

    @property
    def key(self) -> str:
        """What names it among a day's items (its alert is keyed by it)."""
        if self.txn is not None:
            return self.txn.txn_id
        return f"entry {self.entry_id}" if self.entry_id else f"{self.currency}"


def item_of(
    outcome: ItemOutcome,
    detail: str,
    txn: BalanceTxn,
    *,
    ours: int | None = None,
    entry_id: int | None = None,
) -> Item:
    return Item(outcome, detail[:200], txn, None, entry_id, txn.amount_minor, ours, txn.currency)


@dataclass
class DayResult:
    provider: str
    day: date
    items: list[Item] = field(default_factory=list)

    @property
    def status(self) -> DayStatus:
        agree = all(item.outcome in AGREEING for item in self.items)
        return DayStatus.RECONCILED if agree else DayStatus.UNRECONCILED

    def count(self, *outcomes: ItemOutcome) -> int:
        return sum(1 for item in self.items if item.outcome in outcomes)
