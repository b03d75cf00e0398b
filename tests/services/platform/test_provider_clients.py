"""One client, breaker and gateway per provider and app, with per-provider settings."""

from __future__ import annotations

from typing import Any

from flask import Flask

from services.platform.provider_clients import breaker_for, gateway_for, provider_for
from tests.helpers import tune_breaker


def test_clients_breakers_and_gateways_are_built_once_per_app(app_ctx: Flask) -> None:
    assert provider_for("stripe") is provider_for("stripe")
    assert gateway_for("braintree") is gateway_for("braintree")
    assert gateway_for("braintree").breaker is breaker_for("braintree")
    assert provider_for("stripe") is not provider_for("braintree")


def test_breaker_settings_apply_per_provider(app: Flask, make_app: Any) -> None:
    tuned = make_app()
    tune_breaker(tuned, "braintree", open_s=90.0)
    with tuned.app_context():
        assert breaker_for("braintree").config.open_s == 90.0
        assert breaker_for("stripe").config.open_s != 90.0
