"""How the pages take a card: the provider's own card entry, so no card number, CVC or
expiry ever reaches this server (PCI SAQ A). Stripe: Stripe.js's card element, which
turns the card into a PaymentMethod (pm_...) in the browser; Braintree: its client SDK's
card entry, which hands the page a single-use nonce (tokencc_...)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from flask import current_app

from providers.registry import spec_for
from settings import settings


@dataclass(frozen=True)
class CardEntry:
    provider: str
    kind: str  # "stripe_js" or "token" (providers/spec.py)
    js_url: str | None = None
    publishable_key: str | None = None
    test_cards: tuple[tuple[str, str], ...] = ()
    token_re: str = ""  # the shape of the token the card entry yields (the API's contract)
    # The provider's smallest charge by currency, in minor units (the API's contract too).
    minimum_minor: Mapping[str, int] = field(default_factory=dict)


def card_entry() -> CardEntry:
    """The card entry of the provider new payments go to (PAYMENTS_DEFAULT_PROVIDER)."""
    config = current_app.config
    provider = settings().payments.default_provider
    spec = spec_for(provider)
    if spec.card_entry == "stripe_js":
        return CardEntry(
            provider,
            spec.card_entry,
            config["STRIPE_JS_URL"],
            config["STRIPE_PUBLISHABLE_KEY"],
            token_re=spec.payment_method_re,
            minimum_minor=spec.minimum_minor,
        )
    test_cards = () if settings().is_production else spec.test_cards
    return CardEntry(
        provider,
        spec.card_entry,
        test_cards=test_cards,
        token_re=spec.payment_method_re,
        minimum_minor=spec.minimum_minor,
    )


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def card_entry_sources() -> dict[str, str]:
    """What the Content-Security-Policy must allow for the card entry: Stripe.js's origin
    (its script and frames) and Stripe's API (where it sends the card); nothing else."""
    entry = card_entry()
    if entry.kind != "stripe_js" or not entry.js_url:
        return {}
    return {
        "script": origin(entry.js_url),
        "frame": origin(entry.js_url),
        "connect": origin(current_app.config["STRIPE_API_BASE"]),
    }
