"""The outcomes of a provider call. Calls return these; they never raise for them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any


@dataclass(frozen=True)
class Report:
    """What a provider says it acted on, as it says it: checked against our row (a
    payment, a refund: services/movements/answers.py) before any money moves. None: the
    answer did not say."""

    amount_minor: int | None = None
    currency: str | None = None  # upper-case ISO 4217 code
    # Our id of the row as echoed (Stripe's metadata.payment_id, or refund_id for a refund).
    our_id: str | None = None
    reference: str | None = None  # our merchant reference as echoed (Braintree's order_id)
    received_minor: int | None = None  # what actually moved, where the provider says (Stripe)

    @classmethod
    def of(
        cls,
        amount: object,
        currency: object,
        our_id: object = None,
        reference: object = None,
        received: object = None,
    ) -> Report:
        """A report from untrusted JSON values: anything of the wrong type counts as unsaid."""
        return cls(
            _minor(amount),
            currency.upper() if isinstance(currency, str) else None,
            our_id if isinstance(our_id, str) else None,
            reference if isinstance(reference, str) else None,
            _minor(received),
        )


def _minor(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class CardShown:
    """What a receipt may say of the card (never its number): brand and last four digits."""

    brand: str
    last4: str

    @classmethod
    def of(cls, brand: object, last4: object) -> CardShown | None:
        """From untrusted JSON: None unless a short lower-case brand and four digits."""
        if not isinstance(brand, str) or not isinstance(last4, str):
            return None
        if not re.fullmatch(r"[a-z_]{1,20}", brand) or not re.fullmatch(r"[0-9]{4}", last4):
            return None
        return cls(brand, last4)


@dataclass(frozen=True)
class Succeeded:
    """The provider says it charged the customer. Final once its report matches the payment."""

    provider_payment_id: str
    report: Report = Report()
    card: CardShown | None = None  # for the receipt, where the provider said


@dataclass(frozen=True)
class Declined:
    """The provider refused (card declined, invalid request). Final: nothing was charged."""

    code: str
    message: str = ""
    provider_payment_id: str | None = None
    report: Report = Report()
    # The provider refused our request itself (its shape: Stripe's 400
    # invalid_request_error), not the card: our fault, and the same request fails the
    # same way until someone looks. Never shown as a decline; ops are alerted at once.
    is_request_error: bool = False
    # The provider's fingerprint of the card that declined, where it says (Stripe's
    # payment_method.card.fingerprint): card testing counts declines per card.
    card_fingerprint: str | None = None


@dataclass(frozen=True)
class ActionRequired:
    """The provider waits for the customer to authenticate (3-D Secure) at `url`. Not
    final: the customer's return, a webhook or the abandonment sweep settles it."""

    provider_payment_id: str
    url: str | None  # None when the provider gave no redirect (the sweep cancels it)
    report: Report = Report()


@dataclass(frozen=True)
class NotSent:
    """The request provably never reached the provider (connect refused or timed out, DNS,
    TLS handshake, 429 before processing, key in use, breaker open).

    Safe to repeat, after `retry_after_s` when given.
    """

    reason: str
    retry_after_s: float | None = None
    is_provider_failure: bool = True  # counts against the breaker (a breaker rejection doesn't)


@dataclass(frozen=True)
class Unknown:
    """The provider may have acted (read timeout, reset after sending, 5xx).

    NOT safe to repeat blindly: resolve it by asking the provider (replay with the
    same idempotency key, or look the payment up by our reference).
    """

    reason: str
    is_provider_failure: bool = True  # False when the provider answered, just not finally
    # The provider's id when its answer named one (an intent still `processing`): kept,
    # so later lookups ask for it by id instead of searching.
    provider_payment_id: str | None = None
    report: Report = Report()


@dataclass(frozen=True)
class Absent:
    """A lookup's answer: the provider has no record of this payment, from a strongly
    consistent read (a replay, a retrieve by id, a complete list), never from a search
    index, which lags. Sending it is safe; a keyed payment that is Absent was never charged."""

    reason: str


Outcome = Succeeded | Declined | ActionRequired | NotSent | Unknown
LookupOutcome = Succeeded | Declined | ActionRequired | NotSent | Unknown | Absent


def is_provider_failure(outcome: Outcome | Absent) -> bool:
    """Does this outcome count against the provider's circuit breaker?

    Timeouts, connection errors, 429 and 5xx do; declines and other answers don't.
    """
    if isinstance(outcome, NotSent | Unknown):
        return outcome.is_provider_failure
    return False


@dataclass(frozen=True)
class EventPage:
    """One page of a provider's undelivered events, and where the next page starts
    (None: this was the last page)."""

    events: list[dict[str, Any]]
    next_cursor: str | None = None


@dataclass(frozen=True, slots=True)  # a day holds 100,000 of them
class BalanceTxn:
    """One movement of our money at the provider (a Stripe balance transaction): what
    moved (`source_id`: the charge, refund, dispute or payout; `payment_ref`: the
    provider's payment a charge belongs to), gross `amount_minor`, the provider's fee,
    when. `problem` is set when the provider's item could not be believed."""

    txn_id: str
    type: str
    category: str
    source_id: str
    payment_ref: str | None
    amount_minor: int
    fee_minor: int
    currency: str
    created_at: datetime | None
    problem: str | None = None
    # Settled in another currency than the movement's (`source_amount` `source_currency`,
    # when the provider says them): its rate from that currency to `currency`.
    exchange_rate: Decimal | None = None
    source_amount: int | None = None
    source_currency: str | None = None


@dataclass(frozen=True)
class ProviderBalance:
    """What the provider holds for us now, per currency (minor units; Stripe's available
    and pending together)."""

    held: dict[str, int]


@dataclass(frozen=True)
class BalancePage:
    """One page of balance transactions, and the cursor of the next (None: the last)."""

    items: list[BalanceTxn]
    next_cursor: str | None = None
