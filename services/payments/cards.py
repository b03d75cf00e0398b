"""How the pages take a card: the provider's own card entry, so no card number, CVC or
expiry ever reaches this server (PCI SAQ A). Stripe: Stripe.js's card element, which
turns the card into a PaymentMethod (pm_...) in the browser. Braintree: its client SDK
(braintree-web), which turns the card into a single-use nonce (tokencc_...) with the
merchant's tokenization key. The provider is chosen when the page is rendered
(services/payments/routing.py) and the form names it; the payment stays with it."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from flask import current_app

from providers.registry import spec_for
from services.payments import routing
from settings import settings


@dataclass(frozen=True)
class CardEntry:
    provider: str | None  # None: no provider is offered now (every circuit open)
    kind: str  # "stripe_js", "braintree_js" or "token" (providers/spec.py)
    js_url: str | None = None
    publishable_key: str | None = None  # Stripe's publishable key, Braintree's tokenization key
    test_cards: tuple[tuple[str, str], ...] = ()


UNAVAILABLE = CardEntry(None, "none")


@dataclass(frozen=True)
class CardContract:
    """What the API's contract says of one provider's card tokens."""

    provider: str
    token_re: str  # the shape of its tokens
    currencies: tuple[str, ...]  # the shop's currencies its merchant account takes


def card_contracts() -> list[CardContract]:
    currencies = settings().money.currencies
    return [
        CardContract(
            provider,
            spec_for(provider).payment_method_re,
            tuple(c for c in currencies if routing.serves(provider, c)),
        )
        for provider in settings().payments.providers
    ]


def card_entry(currency: str, asked: str | None = None) -> CardEntry:
    """The card entry of the provider this page offers for `currency` (routing.choose:
    `asked` if it is offered, else by weight); UNAVAILABLE when none is offered."""
    provider = routing.choose(currency, asked)
    return UNAVAILABLE if provider is None else entry_of(provider)


# A provider's script card entry: the settings of its script and of the public key it
# tokenizes with (Stripe's publishable key, Braintree's tokenization key).
SCRIPTS = {
    "stripe_js": ("STRIPE_JS_URL", "STRIPE_PUBLISHABLE_KEY"),
    "braintree_js": ("BRAINTREE_JS_URL", "BRAINTREE_TOKENIZATION_KEY"),
}


def entry_of(provider: str) -> CardEntry:
    config, spec = current_app.config, spec_for(provider)
    if spec.card_entry in SCRIPTS:
        script, key = SCRIPTS[spec.card_entry]
        return CardEntry(provider, spec.card_entry, config[script], config[key])
    test_cards = () if settings().is_production else spec.test_cards
    return CardEntry(provider, spec.card_entry, test_cards=test_cards)


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def card_entry_sources() -> dict[str, list[str]]:
    """What the Content-Security-Policy must allow for the card entries of the enabled
    providers: Stripe.js's origin (its script and frames) and Stripe's API (where it
    sends the card); braintree-web's origin and Braintree's client API. Nothing else."""
    config = current_app.config
    sources: dict[str, list[str]] = {"script": [], "frame": [], "connect": []}
    for provider in settings().payments.providers:
        kind = spec_for(provider).card_entry
        if kind == "stripe_js":
            sources["script"].append(origin(config["STRIPE_JS_URL"]))
            sources["frame"].append(origin(config["STRIPE_JS_URL"]))
            sources["connect"].append(origin(config["STRIPE_API_BASE"]))
        elif kind == "braintree_js":
            sources["script"].append(origin(config["BRAINTREE_JS_URL"]))
            sources["connect"].append(origin(config["BRAINTREE_API_BASE"]))
    return {k: sorted(set(v)) for k, v in sources.items() if v}
