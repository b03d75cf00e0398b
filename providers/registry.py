"""The providers this system knows: one line each. Config, webhook handling, workers,
supervisor programs and `make run` all iterate over PROVIDERS."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers import acquirer, stripe
from providers.base import Provider
from providers.http import HttpPolicy
from providers.spec import ProviderSpec

PROVIDERS: dict[str, ProviderSpec] = {
    "stripe": stripe.SPEC,
    "acquirer": acquirer.SPEC,
}


def policy_from_config(config: Mapping[str, Any]) -> HttpPolicy:
    return HttpPolicy(
        connect_timeout_s=config["PROVIDER_CONNECT_TIMEOUT_S"],
        read_timeout_s=config["PROVIDER_READ_TIMEOUT_S"],
        call_budget_s=config["PROVIDER_CALL_BUDGET_S"],
        max_retries=config["PROVIDER_MAX_RETRIES"],
        retry_after_cap_s=config["PROVIDER_RETRY_AFTER_CAP_S"],
    )


def spec_for(name: str) -> ProviderSpec:
    """The spec of provider `name`; raises KeyError for a provider we do not know."""
    return PROVIDERS[name]


def build_provider(name: str, config: Mapping[str, Any]) -> Provider:
    """The client for provider `name`; raises KeyError for a provider we do not know."""
    return spec_for(name).build(config, policy_from_config(config))
