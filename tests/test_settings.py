"""The typed settings: built from the config (after every override), and the only way
the product reads what they hold."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from flask import Flask

from config import settings_from_env
from settings import Settings, settings


def test_settings_are_typed_from_the_environment() -> None:
    built = Settings.from_config(
        settings_from_env(
            {"CURRENCIES": "usd,eur", "RECONCILE_DELAYS_S": "5,10", "SMTP_TIMEOUT_S": "4"}
        )
    )
    assert built.money.currencies == ("USD", "EUR")
    assert built.reconcile.delays_s == (5, 10)
    assert built.email.timeout_s == 4.0
    assert built.breakers["smtp"].open_s == built.breakers["stripe"].open_s == 15
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.payments.lease_s = 1  # type: ignore[misc]  # a frozen dataclass assigned on purpose


def test_a_missing_setting_is_named() -> None:
    config = settings_from_env({})
    del config["PAYMENT_LEASE_S"]
    with pytest.raises(KeyError, match="PAYMENT_LEASE_S"):
        Settings.from_config(config)


def test_an_apps_overrides_reach_its_typed_settings(make_app: Any) -> None:
    app: Flask = make_app(PAYMENT_LEASE_S=77, ALERT_UNKNOWN_COUNT=3)
    assert settings(app).payments.lease_s == 77
    assert settings(app).alerts.unknown_count == 3
    with app.app_context():
        assert settings() is settings(app)
