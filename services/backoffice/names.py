"""A payment as people name it in the console: "#12, EUR 10.00, anna@example.com, Visa
4242". One query for a page's worth of payments (the customer's email joined in)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select

from extensions import db
from models import Customer, Payment
from services.platform.locales import money_text


@dataclass(frozen=True)
class PaymentName:
    payment_id: int
    amount_minor: int
    currency: str
    email: str
    card_brand: str | None
    card_last4: str | None
    provider: str

    @property
    def card(self) -> str:
        """ "Visa 4242"; the provider when no card is known (not charged yet, a top-up by
        a method without a card)."""
        if self.card_last4:
            return f"{(self.card_brand or 'card').title()} {self.card_last4}"
        return f"{self.provider}, no card yet"

    @property
    def text(self) -> str:
        amount = money_text(self.amount_minor, self.currency)
        return f"#{self.payment_id}, {amount}, {self.email}, {self.card}"


def payment_names(payment_ids: Iterable[int | None]) -> dict[int, PaymentName]:
    """The names of these payments, by id (ids that name no payment are left out)."""
    wanted = sorted({i for i in payment_ids if i is not None})
    if not wanted:
        return {}
    found = db.session.execute(
        select(
            Payment.id,
            Payment.amount_minor,
            Payment.currency,
            Customer.email,
            Payment.card_brand,
            Payment.card_last4,
            Payment.provider,
        )
        .join(Customer, Customer.id == Payment.customer_id)
        .where(Payment.id.in_(wanted))
    ).all()
    return {row[0]: PaymentName(*row) for row in found}


def customer_emails(customer_ids: Iterable[int | None]) -> dict[int, str]:
    """The emails of these customers, by id: a customer is named by their email."""
    wanted = sorted({i for i in customer_ids if i is not None})
    if not wanted:
        return {}
    found = db.session.execute(select(Customer.id, Customer.email).where(Customer.id.in_(wanted)))
    return {row[0]: row[1] for row in found}


# A provider's last answer, as the raw text our clients keep (providers/http.py and each
# provider's client), read into what an operator decides on. First match wins.
ANSWER_WORDS = (
    (re.compile(r"timeout|timed out", re.I), "a timeout: no answer in time (it may have acted)"),
    (
        re.compile(r"broken after sending|reset|aborted", re.I),
        "the connection broke after sending (it may have acted)",
    ),
    (
        re.compile(r"provider error 5\d\d|HTTP 5\d\d|\b50[0-9]\b", re.I),
        "a 5xx: the provider failed (it may have acted)",
    ),
    (re.compile(r"circuit|breaker", re.I), "not sent: the provider's breaker was open"),
    (
        re.compile(r"connect|unreachable|refused the connection|Max retries", re.I),
        "the provider could not be reached",
    ),
    (re.compile(r"declin|refus|\b4\d\d\b", re.I), "a refusal"),
    (re.compile(r"malformed|not ours|does not match|mismatch", re.I), "an answer we do not trust"),
)


def answer_in_words(raw: str | None) -> str:
    """What the provider's last answer was, in a few words ('' for none)."""
    if not raw:
        return ""
    for pattern, words in ANSWER_WORDS:
        if pattern.search(raw):
            return words
    return "another answer: see the text"
