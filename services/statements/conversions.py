"""A movement the provider settled in another currency than ours (a USD charge on an
EUR balance): it matches our entry when the provider's own record says so, its source in
our amount and currency and its settled amount that amount at its `exchange_rate`
(Stripe rounds to the settlement currency's unit); the books then convert it through
fx:<provider>, the currency-conversion account, at that rate: the clearing account gives
our currency and takes the provider's (`converted`, an entry named by the transaction)."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

from models import Account, Source, SourceKind
from models.money import InvalidAmountError, exponent_of
from providers.outcomes import BalanceTxn
from services.books import journal
from services.platform.locales import money_text
from services.statements.items import Item

ROUNDING_UNITS = 1  # a settled amount may differ from ours at the rate by this many units


def at_rate(txn: BalanceTxn, amount: int, currency: str) -> int | None:
    """Our amount in the provider's currency at its rate (None: no rate, or a currency
    we do not know)."""
    if txn.exchange_rate is None:
        return None
    try:
        shift = exponent_of(txn.currency) - exponent_of(currency)
    except InvalidAmountError:
        return None
    converted = Decimal(amount) * txn.exchange_rate * Decimal(10) ** shift
    return int(converted.to_integral_value(rounding=ROUND_HALF_EVEN))


def agrees(txn: BalanceTxn, amount: int, currency: str) -> bool:
    """The provider's record of a conversion of our amount: its source in our amount and
    currency (when it says them), its amount ours at its rate."""
    if txn.source_amount is not None and abs(txn.source_amount) != abs(amount):
        return False
    if txn.source_currency is not None and txn.source_currency != currency:
        return False
    settled = at_rate(txn, amount, currency)
    return settled is not None and abs(settled - txn.amount_minor) <= ROUNDING_UNITS


def said(txn: BalanceTxn, amount: int, currency: str) -> str:
    settled = at_rate(txn, amount, currency)
    ours = money_text(amount, currency)
    theirs = money_text(txn.amount_minor, txn.currency)
    at = f" (ours at the rate: {money_text(settled, txn.currency)})" if settled is not None else ""
    return f"{ours} settled as {theirs} at {txn.exchange_rate}{at}"


def book(provider: str, items: list[Item]) -> None:
    """The conversion of each matched item across currencies: the clearing account gives
    ours and takes the provider's, fx:<provider> the other way (once: the entry is named by
    the transaction)."""
    clearing, fx = Account.clearing(provider), Account.fx(provider)
    entries = []
    for item in items:
        if item.converted is None or item.txn is None or item.txn_row_id is None:
            continue
        ours, currency = item.converted
        theirs = item.txn.amount_minor
        legs = [
            journal.Leg(clearing, -ours, currency),
            journal.Leg(fx, ours, currency),
            journal.Leg(clearing, theirs, item.txn.currency),
            journal.Leg(fx, -theirs, item.txn.currency),
        ]
        entries.append((Source(SourceKind.BALANCE, item.txn_row_id), "converted", legs))
    journal.post_many(entries)
