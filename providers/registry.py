"""Build provider clients from the Flask config (once per process)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.acquirer import AcquirerProvider
from providers.base import Provider
from providers.http import HttpPolicy
from providers.stripe import StripeProvider


def policy_from_config(config: Mapping[str, Any]) -> HttpPolicy:
    return HttpPolicy(
        connect_timeout_s=config["PROVIDER_CONNECT_TIMEOUT_S"],
        read_timeout_s=config["PROVIDER_READ_TIMEOUT_S"],
        call_budget_s=config["PROVIDER_CALL_BUDGET_S"],
        max_retries=config["PROVIDER_MAX_RETRIES"],
        retry_after_cap_s=config["PROVIDER_RETRY_AFTER_CAP_S"],
    )


def build_provider(name: str, config: Mapping[str, Any]) -> Provider:
    """The client for provider `name`; raises KeyError for a provider we do not know."""
    policy = policy_from_config(config)
    if name == "stripe":
        return StripeProvider(
            config["STRIPE_API_BASE"],
            config["STRIPE_SECRET_KEY"],
            policy,
            config["STRIPE_PAYMENT_METHOD"],
            config["STRIPE_API_VERSION"],
        )
    if name == "acquirer":
        return AcquirerProvider(config["ACQUIRER_API_BASE"], config["ACQUIRER_API_KEY"], policy)
    raise KeyError(f"unknown provider {name!r}")
