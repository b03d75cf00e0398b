"""Which provider a payment goes to, decided once. A card token is its provider's own (a
Stripe PaymentMethod cannot be charged at Braintree, nor a Braintree nonce at Stripe), so
the provider is chosen when the payment page is rendered, by the configured weights
among the providers that take the currency and whose circuit is not open
(PAYMENTS_PROVIDER_WEIGHTS), and the page's card entry is that provider's. The payment
is created for the provider the form names (or, from the API, the one asked for, or the
one whose token shape the card token has), and it never moves to another provider:
only its own provider can tell what happened to it."""

from __future__ import annotations

import random
from collections.abc import Sequence

from flask import current_app
from redis.exceptions import RedisError

from models.money import Money
from providers.registry import spec_for
from services.platform.errors import ConflictError, UnprocessableError
from services.platform.locales import money_text
from services.platform.provider_clients import breaker_for
from settings import settings

NOT_OFFERED = ("open", "forced_open")  # a breaker in these states: not offered on a page


def serves(provider: str, currency: str) -> bool:
    """Does the provider's merchant account take payments in `currency`?"""
    setting = spec_for(provider).account_currency_setting
    return setting is None or current_app.config[setting] == currency.upper()


def is_open(provider: str) -> bool:
    """Is the provider's circuit open now? (Read only: no probe is taken.) Redis down
    reads as closed: the page still offers it, and the worker's breaker decides."""
    try:
        return breaker_for(provider).snapshot()["state"] in NOT_OFFERED
    except RedisError:
        return False


def offered(currency: str) -> list[str]:
    """The providers a payment page may offer now, with a weight above 0."""
    weights = settings().payments.weights
    return [
        name
        for name in settings().payments.providers
        if weights.get(name, 0) > 0 and serves(name, currency) and not is_open(name)
    ]


def choose(currency: str, asked: str | None = None, rng: random.Random | None = None) -> str | None:
    """The provider a payment page offers: `asked` (the page's ?provider=) if it is
    offered, else one drawn by weight among those offered; None when none is."""
    names = offered(currency)
    if asked in names:
        return asked
    if not names:
        return None
    weights = settings().payments.weights
    return (rng or random).choices(names, [weights[name] for name in names])[0]


def provider_of(asked: object, card: object, currency: str, *, is_orders: bool = False) -> str:
    """The provider a new payment is created for: the one the form or the client names,
    else the one enabled provider whose token shape the card token has (the default
    provider when none or several have: its parse then says what is wrong). Raises
    UnprocessableError for a provider not enabled or not taking `currency`
    (`provider_currency_invalid`; a ConflictError `currency_not_served` when the currency
    is the order's: `is_orders`)."""
    enabled: Sequence[str] = settings().payments.providers
    if asked is not None and asked != "":
        if not isinstance(asked, str) or asked not in enabled:
            raise UnprocessableError(
                f"provider must be one of {', '.join(enabled)}", code="provider_invalid"
            )
        name = asked
    else:
        name = _named_by_token(card) or settings().payments.default_provider
    if not serves(name, currency):
        message = f"{name} does not take payments in {currency}"
        if is_orders:
            raise ConflictError(message, code="currency_not_served")
        raise UnprocessableError(message, code="provider_currency_invalid")
    return name


def lean_provider(asked: object, card: object) -> str | None:
    """provider_of for the lean statements, without raising: None sends the request to
    the ORM path, which says what is wrong. The currency is checked in the statement."""
    enabled = settings().payments.providers
    if asked is not None and asked != "":
        return asked if isinstance(asked, str) and asked in enabled else None
    return _named_by_token(card)


def _named_by_token(card: object) -> str | None:
    """The one enabled provider whose token shape the card token has (None: none, or
    several)."""
    enabled = settings().payments.providers
    fits = [p for p in enabled if spec_for(p).accepts_payment_method(card)]
    return fits[0] if len(fits) == 1 else None


def minimum_minor(currency: str) -> int:
    """The shop's smallest card payment in `currency`: the largest of the enabled
    providers' minimums, so an amount one provider takes is taken by every one."""
    return max(spec_for(p).minimum_for(currency) for p in settings().payments.providers)


def check_minimum(amount_minor: int, currency: str) -> None:
    """Refuse, before anything is written or sent, an amount under the shop's smallest
    card payment in that currency (Stripe's: 0.50 USD, 0.30 GBP, 50 JPY...)."""
    minimum = minimum_minor(currency)
    if amount_minor < minimum:
        raise UnprocessableError(
            f"card payments are at least {money_text(minimum, currency)}; "
            f"this payment is {money_text(amount_minor, currency)}",
            code="amount_too_small",
            details={"minimum": Money(minimum, currency)},
        )
