"""Stripe (PaymentIntents): client, webhooks and settings, exported as one spec."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from providers.http import HttpPolicy
from providers.settings import ConfigError, number
from providers.spec import ProviderSpec, SettingsContext, WebhookScheme
from providers.stripe.client import API_VERSION, SETTLE_S, StripeProvider
from providers.stripe.webhooks import parse_stripe, verify_stripe

DEV_SECRET_KEY = "sk_test_sandbox"
DEV_WEBHOOK_SECRET = "whsec_sandbox"
DEV_PUBLISHABLE_KEY = "pk_test_sandbox"
STRIPE_JS_URL = "https://js.stripe.com/v3"  # production: always Stripe's own (PCI SAQ A)


def read_settings(env: Mapping[str, str], context: SettingsContext) -> dict[str, Any]:
    if env.get("STRIPE_SEARCH_LAG_S"):
        raise ConfigError(
            "STRIPE_SEARCH_LAG_S is gone: search never proves that a payment was not "
            "charged (its index lags). Remove it; STRIPE_SETTLE_S is how long a request "
            "may still run at Stripe (default 120)."
        )
    settings = {
        "STRIPE_API_BASE": context.base_url(env, "STRIPE_API_BASE", context.sandbox_url),
        "STRIPE_SECRET_KEY": context.secret(env, "STRIPE_SECRET_KEY", DEV_SECRET_KEY),
        "STRIPE_WEBHOOK_SECRET": context.secret(env, "STRIPE_WEBHOOK_SECRET", DEV_WEBHOOK_SECRET),
        # During a rotation: the secret being retired, also accepted until it is removed.
        "STRIPE_WEBHOOK_SECRET_PREVIOUS": context.optional_secret(
            env, "STRIPE_WEBHOOK_SECRET_PREVIOUS"
        ),
        # Stripe.js, loaded by the checkout page, and the key it tokenizes cards with.
        "STRIPE_PUBLISHABLE_KEY": _publishable_key(env, context),
        "STRIPE_JS_URL": context.base_url(
            env, "STRIPE_JS_URL", f"{context.sandbox_url}/js/v3", production_default=STRIPE_JS_URL
        ),
        # Sent as Stripe-Version on every call: response shapes never follow the
        # account's default. The default is the version the client and sandbox speak.
        "STRIPE_API_VERSION": env.get("STRIPE_API_VERSION", API_VERSION),
        # How long a request may still run at Stripe after we stopped waiting: "never
        # charged" is concluded (from a complete list, never from search) only after it.
        "STRIPE_SETTLE_S": number(env, "STRIPE_SETTLE_S", SETTLE_S),
    }
    if context.is_production:
        _check_keys_work_together(settings, is_test_mode=env.get("STRIPE_TEST_MODE") == "true")
    return settings


def _check_keys_work_together(settings: Mapping[str, Any], *, is_test_mode: bool) -> None:
    """Production runs live keys, both of one mode (a test-mode secret with a live
    publishable key makes every confirm a 400 that reads like a card decline); test
    keys only where STRIPE_TEST_MODE=true says so. Webhook secrets look like Stripe's."""
    mode = "test" if is_test_mode else "live"
    secret_key, publishable = settings["STRIPE_SECRET_KEY"], settings["STRIPE_PUBLISHABLE_KEY"]
    if not secret_key.startswith((f"sk_{mode}_", f"rk_{mode}_")):
        hint = "" if is_test_mode else " (test keys: set STRIPE_TEST_MODE=true as well)"
        raise ConfigError(f"STRIPE_SECRET_KEY must be a {mode} key (sk_{mode}_...){hint}")
    if not publishable.startswith(f"pk_{mode}_"):
        raise ConfigError(
            f"STRIPE_PUBLISHABLE_KEY must be a {mode} key (pk_{mode}_...), "
            "of the same mode as STRIPE_SECRET_KEY"
        )
    for name in ("STRIPE_WEBHOOK_SECRET", "STRIPE_WEBHOOK_SECRET_PREVIOUS"):
        value = settings[name]
        if (value or name == "STRIPE_WEBHOOK_SECRET") and not value.startswith("whsec_"):
            raise ConfigError(f"{name} must be a Stripe webhook signing secret (whsec_...)")


def _publishable_key(env: Mapping[str, str], context: SettingsContext) -> str:
    """The key every browser sees: a secret key here would hand the account to anyone."""
    key = context.secret(env, "STRIPE_PUBLISHABLE_KEY", DEV_PUBLISHABLE_KEY)
    if not key.startswith("pk_"):
        raise ConfigError("STRIPE_PUBLISHABLE_KEY must be a publishable key (pk_...)")
    return key


def build(config: Mapping[str, Any], policy: HttpPolicy) -> StripeProvider:
    return StripeProvider(
        config["STRIPE_API_BASE"],
        config["STRIPE_SECRET_KEY"],
        # Stripe says when a repeat cannot help (a stored answer): stop retrying then.
        replace(policy, stop_retry_header="Stripe-Should-Retry"),
        config["STRIPE_API_VERSION"],
        settle_s=config["STRIPE_SETTLE_S"],
    )


# Stripe's minimum charge amounts (docs.stripe.com/currencies, "Minimum and maximum
# charge amounts"), in minor units; below them a confirm is `amount_too_small`.
MINIMUM_CHARGE_MINOR = {
    "USD": 50, "EUR": 50, "GBP": 30, "CHF": 50, "CAD": 50, "AUD": 50, "NZD": 50,
    "SGD": 50, "BRL": 50, "INR": 50, "JPY": 50, "DKK": 250, "NOK": 300, "SEK": 300,
    "PLN": 200, "CZK": 1500, "HUF": 17500, "HKD": 400, "MXN": 1000, "RON": 200,
    "BGN": 100, "AED": 200, "MYR": 200, "THB": 1000,
}  # fmt: skip

SPEC = ProviderSpec(
    name="stripe",
    lists_undelivered_events=True,
    read_settings=read_settings,
    build=build,
    webhook=WebhookScheme(verify_stripe, parse_stripe, "STRIPE_WEBHOOK_SECRET"),
    dev_secrets=frozenset({DEV_SECRET_KEY, DEV_WEBHOOK_SECRET, DEV_PUBLISHABLE_KEY}),
    slots=64,  # Stripe carries most traffic: 64 calls at 1 s are 64 payments a second
    payment_method_re=r"pm_[A-Za-z0-9_]{1,250}",
    card_entry="stripe_js",
    minimum_minor=MINIMUM_CHARGE_MINOR,
)

__all__ = ["API_VERSION", "SPEC", "StripeProvider"]
