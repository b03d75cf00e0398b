"""Braintree (PayPal's card gateway, no idempotency keys): client, webhooks and settings,
one spec."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from providers.braintree.client import SETTLE_S, BraintreeProvider
from providers.braintree.refunds import UNSETTLED_RETRY_S
from providers.braintree.webhooks import load_braintree, parse_braintree, verify_braintree
from providers.http import HttpPolicy
from providers.settings import ConfigError, number
from providers.spec import ProviderSpec, SettingsContext, WebhookScheme

DEV_MERCHANT_ID = "sandbox_merchant"
DEV_PUBLIC_KEY = "sandbox_public_key"
DEV_PRIVATE_KEY = "sandbox_private_key"
# A tokenization key is public (every browser sees it) and can only make nonces.
DEV_TOKENIZATION_KEY = "sandbox_tk000000_sandbox_merchant"
PRODUCTION_API_BASE = "https://api.braintreegateway.com"
PRODUCTION_GRAPHQL_URL = "https://payments.braintree-api.com/graphql"
# braintree-web's client, from Braintree's own origin in production (PCI SAQ A).
BRAINTREE_JS_URL = "https://js.braintreegateway.com/web/3.111.0/js/client.min.js"


def read_settings(env: Mapping[str, str], context: SettingsContext) -> dict[str, Any]:
    currency = env.get("BRAINTREE_CURRENCY", "EUR").strip().upper()
    if len(currency) != 3 or not currency.isalpha():
        raise ConfigError("BRAINTREE_CURRENCY must be the ISO 4217 code of the merchant account")
    return {
        # Braintree's gateway (production: its own; the sandbox's Braintree dialect here).
        "BRAINTREE_API_BASE": context.base_url(
            env,
            "BRAINTREE_API_BASE",
            context.sandbox_url,  # the sandbox answers at /merchants/<id>/... as Braintree
            production_default=PRODUCTION_API_BASE,
        ),
        # Braintree's GraphQL API: the books read its fee report there.
        "BRAINTREE_GRAPHQL_URL": context.base_url(
            env,
            "BRAINTREE_GRAPHQL_URL",
            f"{context.sandbox_url}/graphql",
            production_default=PRODUCTION_GRAPHQL_URL,
        ),
        # Not a secret, but the sandbox's in production would send every call astray.
        "BRAINTREE_MERCHANT_ID": context.secret(env, "BRAINTREE_MERCHANT_ID", DEV_MERCHANT_ID),
        "BRAINTREE_PUBLIC_KEY": context.secret(env, "BRAINTREE_PUBLIC_KEY", DEV_PUBLIC_KEY),
        # Signs our calls and Braintree's webhooks alike (bt_signature).
        "BRAINTREE_PRIVATE_KEY": context.secret(env, "BRAINTREE_PRIVATE_KEY", DEV_PRIVATE_KEY),
        # During a key rotation: the private key being retired, its webhooks still accepted.
        "BRAINTREE_PRIVATE_KEY_PREVIOUS": context.optional_secret(
            env, "BRAINTREE_PRIVATE_KEY_PREVIOUS"
        ),
        # braintree-web, loaded by the payment pages, and the key it makes nonces with.
        "BRAINTREE_JS_URL": context.base_url(
            env,
            "BRAINTREE_JS_URL",
            f"{context.sandbox_url}/braintree-web/client.js",
            production_default=BRAINTREE_JS_URL,
        ),
        "BRAINTREE_TOKENIZATION_KEY": _tokenization_key(env, context),
        # The merchant account's one currency: a payment in another is refused before it
        # is created (Braintree would charge the account's currency).
        "BRAINTREE_CURRENCY": currency,
        # How long a request may still run at Braintree after our last send: a refund
        # its sale does not list is proven never made only after it. (A sale has no such
        # read: one not found stays unknown, then goes to review.)
        "BRAINTREE_SETTLE_S": number(env, "BRAINTREE_SETTLE_S", SETTLE_S),
        # A part of a sale not settled yet cannot be refunded (a void takes only the whole):
        # it is asked again after this (Braintree settles in a daily batch).
        "BRAINTREE_UNSETTLED_RETRY_S": number(
            env, "BRAINTREE_UNSETTLED_RETRY_S", UNSETTLED_RETRY_S
        ),
    }


def _tokenization_key(env: Mapping[str, str], context: SettingsContext) -> str:
    """The key every browser sees: a private key here would hand the account to anyone.
    Braintree's look like <environment>_<random>_<merchant id>."""
    key = context.secret(env, "BRAINTREE_TOKENIZATION_KEY", DEV_TOKENIZATION_KEY)
    if not re.fullmatch(r"(sandbox|production|development)_[a-z0-9]+_[A-Za-z0-9_]+", key):
        raise ConfigError(
            "BRAINTREE_TOKENIZATION_KEY must be a tokenization key "
            "(<environment>_<random>_<merchant id>), never an API key"
        )
    return key


def build(config: Mapping[str, Any], policy: HttpPolicy) -> BraintreeProvider:
    return BraintreeProvider(
        config["BRAINTREE_API_BASE"],
        config["BRAINTREE_MERCHANT_ID"],
        config["BRAINTREE_PUBLIC_KEY"],
        config["BRAINTREE_PRIVATE_KEY"],
        config["BRAINTREE_CURRENCY"],
        policy,
        settle_s=config["BRAINTREE_SETTLE_S"],
        unsettled_retry_s=config["BRAINTREE_UNSETTLED_RETRY_S"],
        graphql_url=config["BRAINTREE_GRAPHQL_URL"],
    )


SPEC = ProviderSpec(
    name="braintree",
    read_settings=read_settings,
    build=build,
    webhook=WebhookScheme(
        verify_braintree, parse_braintree, "BRAINTREE_PRIVATE_KEY", load=load_braintree
    ),
    dev_secrets=frozenset({DEV_MERCHANT_ID, DEV_PUBLIC_KEY, DEV_PRIVATE_KEY, DEV_TOKENIZATION_KEY}),
    slots=16,
    # A payment method nonce: the card entry's (tokencc_...) or a published test nonce.
    payment_method_re=r"tokencc_[A-Za-z0-9_]{1,240}|fake-[a-z0-9-]{1,100}",
    card_entry="braintree_js",
    account_currency_setting="BRAINTREE_CURRENCY",
)

__all__ = ["SPEC", "BraintreeProvider"]
