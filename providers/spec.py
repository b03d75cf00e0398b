"""What a provider package exports: one ProviderSpec, everything the rest of the system
needs to know about the provider. The registry (providers/registry.py) maps names to
specs; config, webhooks, workers, supervisor and `make run` iterate over it."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from providers.base import Provider
from providers.events import ProviderEvent, load_json_object
from providers.http import HttpPolicy
from providers.settings import ConfigError, provider_base, secret


@dataclass(frozen=True)
class SettingsContext:
    """What a provider's settings reader gets besides the environment."""

    sandbox_url: str  # base of the development defaults
    is_production: bool
    dev_secrets: frozenset[str]  # every development secret: production refuses them all

    def secret(self, env: Mapping[str, str], name: str, dev_default: str) -> str:
        """A provider secret: its development default outside production, checked in it."""
        return secret(
            env, name, dev_default, is_production=self.is_production, dev_secrets=self.dev_secrets
        )

    def optional_secret(self, env: Mapping[str, str], name: str) -> str:
        """A secret that may be unset ("" then), e.g. a webhook secret being retired;
        production refuses a development secret in it like in any other."""
        value = env.get(name, "")
        if value and self.is_production and value.strip() in self.dev_secrets:
            raise ConfigError(f"{name} is a development default; production needs its own secret.")
        return value

    def base_url(
        self,
        env: Mapping[str, str],
        name: str,
        dev_default: str,
        production_default: str | None = None,
    ) -> str:
        """A provider base URL (https only in production)."""
        return provider_base(
            env,
            name,
            dev_default,
            is_production=self.is_production,
            production_default=production_default,
        )


@dataclass(frozen=True)
class WebhookScheme:
    """How the provider signs and shapes its webhook deliveries."""

    verify: Callable[[Mapping[str, str], bytes, str, float], None]  # raises WebhookError
    parse: Callable[[dict[str, Any]], ProviderEvent]  # raises WebhookError
    secret_setting: str  # the setting holding the signing secret
    # The verified body as the JSON object `parse` reads and the record stores (raises
    # WebhookError): JSON for most; Braintree's is a form around base64 XML.
    load: Callable[[bytes], dict[str, Any]] = load_json_object


@dataclass(frozen=True)
class ProviderSpec:
    name: str
    # The provider's settings from the environment (names, defaults, production checks).
    read_settings: Callable[[Mapping[str, str], SettingsContext], dict[str, Any]]
    # Its client, from the app's settings and the shared HTTP policy.
    build: Callable[[Mapping[str, Any], HttpPolicy], Provider]
    webhook: WebhookScheme
    dev_secrets: frozenset[str] = frozenset()  # the sandbox's development secrets
    # Its bulkhead: provider calls in flight at once on its queue, each a thread of one
    # worker process per host (`flask worker --slots`; commands/workers.py). A call spends
    # its time waiting on the provider, so slots are cheap (a thread each, not a process).
    slots: int = 8
    # The shape of the provider's card token (Stripe: pm_...): anything else is refused
    # before it is stored, and a payment fails over only to a provider its token fits.
    payment_method_re: str = r"[A-Za-z0-9_]{1,255}"
    # How the checkout page takes a card: "stripe_js" (the card element of Stripe.js)
    # or "token" (a choice of `test_cards` in development, a token field otherwise).
    card_entry: str = "token"
    test_cards: tuple[tuple[str, str], ...] = ()  # (token, label)
    # The smallest amount the provider charges, in minor units by currency (a smaller
    # one is refused before a payment is created; it would come back as a "decline").
    minimum_minor: Mapping[str, int] = field(default_factory=dict)
    # The setting naming the merchant account's one currency (Braintree's), or None when
    # the provider takes every currency of the shop (Stripe).
    account_currency_setting: str | None = None
    # The provider lists the webhook events it failed to deliver (Stripe's
    # `GET /v1/events?delivery_success=false`): the periodic backfill asks it. A provider
    # without such a list (Braintree retries its own notifications) is never asked: an
    # answer it cannot give is no failure of its health (the breaker never hears of it).
    lists_undelivered_events: bool = False

    def minimum_for(self, currency: str) -> int:
        return self.minimum_minor.get(currency.upper(), 1)

    def accepts_payment_method(self, value: object) -> bool:
        return isinstance(value, str) and re.fullmatch(self.payment_method_re, value) is not None
