"""The providers this system knows: one line each. Config, webhook handling, workers,
supervisor programs and `make run` all iterate over PROVIDERS."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers import braintree, stripe
from providers.base import Provider
from providers.http import HttpPolicy
from providers.spec import ProviderSpec

PROVIDERS: dict[str, ProviderSpec] = {
    "stripe": stripe.SPEC,
    "braintree": braintree.SPEC,
}


def spec_for(name: str) -> ProviderSpec:
    """The spec of provider `name`; raises KeyError for a provider we do not know."""
    return PROVIDERS[name]


def build_provider(name: str, config: Mapping[str, Any], policy: HttpPolicy) -> Provider:
    """The client for provider `name`, from its own settings in `config` and the HTTP
    policy towards every provider; raises KeyError for a provider we do not know."""
    return spec_for(name).build(config, policy)
