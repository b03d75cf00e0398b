"""A day's items: a day reconciles only when every item agrees; each item is named (its
alert's key) by the provider's transaction, else our entry, else its currency; every
outcome to look at says what to do."""

from __future__ import annotations

from datetime import date

from models import DayStatus, ItemOutcome
from providers.outcomes import BalanceTxn
from services.statements.items import AGREEING, WHAT_TO_DO, DayResult, Item, item_of

TXN = BalanceTxn("txn_1", "charge", "charge", "ch_1", "pi_1", 1000, 40, "EUR", None)


def test_a_day_reconciles_only_when_every_item_agrees() -> None:
    day = DayResult("stripe", date(2026, 12, 1))
    assert day.status == DayStatus.RECONCILED  # nothing happened
    day.items = [item_of(ItemOutcome.MATCHED, "ok", TXN), item_of(ItemOutcome.BOOKED, "fee", TXN)]
    assert day.status == DayStatus.RECONCILED and day.count(*AGREEING) == 2
    day.items.append(Item(ItemOutcome.MISSING_AT_PROVIDER, "ours", entry_id=7))
    assert day.status == DayStatus.UNRECONCILED
    assert day.count(ItemOutcome.MISSING_AT_PROVIDER) == 1


def test_an_item_is_named_by_what_it_is_about() -> None:
    assert item_of(ItemOutcome.DUPLICATE, "x" * 300, TXN).key == "txn_1"
    assert len(item_of(ItemOutcome.DUPLICATE, "x" * 300, TXN).detail) == 200
    assert Item(ItemOutcome.MISSING_AT_PROVIDER, "", entry_id=7).key == "entry 7"
    assert Item(ItemOutcome.BALANCE_DIFFERS, "", currency="EUR").key == "EUR"


def test_every_outcome_to_look_at_says_what_to_do() -> None:
    to_look_at = set(ItemOutcome) - set(AGREEING)
    assert set(WHAT_TO_DO) == to_look_at
    assert all(len(text) > 20 for text in WHAT_TO_DO.values())
