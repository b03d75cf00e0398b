"""The bank acquirer (no idempotency keys): client, webhooks and settings, one spec."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.acquirer.client import AcquirerProvider
from providers.acquirer.webhooks import parse_acquirer, verify_acquirer
from providers.http import HttpPolicy
from providers.spec import ProviderSpec, SettingsContext, WebhookScheme

DEV_API_KEY = "acq_test_sandbox"
DEV_WEBHOOK_SECRET = "acqwh_sandbox"


def read_settings(env: Mapping[str, str], context: SettingsContext) -> dict[str, Any]:
    return {
        "ACQUIRER_API_BASE": context.base_url(
            env, "ACQUIRER_API_BASE", f"{context.sandbox_url}/acquirer"
        ),
        "ACQUIRER_API_KEY": context.secret(env, "ACQUIRER_API_KEY", DEV_API_KEY),
        "ACQUIRER_WEBHOOK_SECRET": context.secret(
            env, "ACQUIRER_WEBHOOK_SECRET", DEV_WEBHOOK_SECRET
        ),
        # During a rotation: the secret being retired, also accepted until it is removed.
        "ACQUIRER_WEBHOOK_SECRET_PREVIOUS": context.optional_secret(
            env, "ACQUIRER_WEBHOOK_SECRET_PREVIOUS"
        ),
    }


def build(config: Mapping[str, Any], policy: HttpPolicy) -> AcquirerProvider:
    return AcquirerProvider(config["ACQUIRER_API_BASE"], config["ACQUIRER_API_KEY"], policy)


SPEC = ProviderSpec(
    name="acquirer",
    read_settings=read_settings,
    build=build,
    webhook=WebhookScheme(verify_acquirer, parse_acquirer, "ACQUIRER_WEBHOOK_SECRET"),
    dev_secrets=frozenset({DEV_API_KEY, DEV_WEBHOOK_SECRET}),
    slots=16,
    payment_method_re=r"card_[A-Za-z0-9_]{1,250}",
    # The sandbox's test tokens (sandbox/acquirer/api.py); the acquirer's own card form
    # is not part of this product (docs/security.md).
    test_cards=(
        ("card_ok", "Test card: approved"),
        ("card_declined", "Test card: declined"),
        ("card_insufficient_funds", "Test card: insufficient funds"),
    ),
)

__all__ = ["SPEC", "AcquirerProvider"]
