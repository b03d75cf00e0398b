"""Braintree's published test values (developer.paypal.com/braintree/docs/reference/
general/testing): the test nonces, each standing for a card, and the amounts that decide
a sale and its settlement."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any


@dataclass(frozen=True)
class Card:
    number: str
    card_type: str
    declines_with: str | None = None  # a processor response code, whatever the amount

    def details(self) -> dict[str, Any]:
        """The transaction's `credit-card`: never the number, as Braintree answers."""
        return {
            "bin": self.number[:6],
            "last_4": self.number[-4:],
            "card_type": self.card_type,
            "expiration_month": "12",
            "expiration_year": "2030",
            # the same card, whatever nonce brought it (duplicate checking reads it)
            "unique_number_identifier": f"sandbox{self.number}",
        }


VISA = Card("4111111111111111", "Visa")
NONCES = {
    "fake-valid-nonce": VISA,
    "fake-valid-visa-nonce": VISA,
    "fake-valid-mastercard-nonce": Card("5555555555554444", "MasterCard"),
    "fake-valid-amex-nonce": Card("378282246310005", "American Express"),
    "fake-valid-discover-nonce": Card("6011111111111117", "Discover"),
    "fake-processor-declined-visa-nonce": Card("4000111111111115", "Visa", "2000"),
    "fake-processor-declined-mastercard-nonce": Card("5105105105105100", "MasterCard", "2000"),
    "fake-processor-failure-visa-nonce": Card("4000111111111127", "Visa", "3000"),
}
RESPONSE_TEXTS = {
    "2000": "Do Not Honor",
    "2001": "Insufficient Funds",
    "2015": "Transaction Not Allowed",
    "3000": "Processor Network Unavailable - Try Again",
}
HARD_DECLINES = {"2004", "2005", "2007", "2015", "2019", "2041", "2043", "2044", "2047"}


# Braintree's test card numbers, as its client SDK tokenizes them.
NUMBERS = {card.number: card for card in NONCES.values()}


def card_of(nonce: object) -> Card | None:
    """The card of one of Braintree's fixed test nonces."""
    return NONCES.get(nonce) if isinstance(nonce, str) else None


def card_of_number(number: str) -> Card | None:
    return NUMBERS.get(number)


@dataclass(frozen=True)
class Outcome:
    status: str
    message: str = ""
    fields: dict[str, Any] = field(default_factory=dict)


def _declined(code: str) -> Outcome:
    text = RESPONSE_TEXTS.get(code, "Processor Declined")
    kind = "hard_declined" if code in HARD_DECLINES else "soft_declined"
    return Outcome(
        "processor_declined",
        text,
        {
            "processor_response_code": code,
            "processor_response_text": text,
            "processor_response_type": kind,
        },
    )


DUPLICATE = Outcome(
    "gateway_rejected",
    "Gateway Rejected: duplicate",
    {"gateway_rejection_reason": "duplicate", "processor_response_code": None},
)


def sale_outcome(amount: Decimal, card: Card) -> Outcome:
    """What Braintree's sandbox answers a sale of `amount` with `card`."""
    if card.declines_with == "3000" or Decimal("3000.00") <= amount <= Decimal("3000.99"):
        failed = _declined("3000")
        return Outcome("failed", failed.message, failed.fields)
    if card.declines_with is not None:
        return _declined(card.declines_with)
    if Decimal("2000.00") <= amount <= Decimal("2999.99"):
        return _declined(str(int(amount)))
    if amount == Decimal("5001.00"):
        return Outcome(
            "gateway_rejected",
            "Gateway Rejected: application_incomplete",
            {"gateway_rejection_reason": "application_incomplete", "processor_response_code": None},
        )
    return Outcome("authorized")


def settlement_decline(amount: Decimal) -> str | None:
    """The settlement response of a card sale that settlement declines (4001.00-4001.99
    and 4003.00-5000.99 decline "on certain transaction types": here, card sales)."""
    if Decimal("4001.00") <= amount <= Decimal("4001.99") or (
        Decimal("4003.00") <= amount <= Decimal("5000.99")
    ):
        return str(int(amount))
    return None
