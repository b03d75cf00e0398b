"""Settings helpers shared by config.py and the providers: secrets and base URLs."""

from __future__ import annotations

import re

import pytest

from providers.settings import ConfigError, integer, provider_base, secret

DEV = frozenset({"dev-secret"})


def test_outside_production_a_missing_secret_is_its_development_default() -> None:
    assert secret({}, "X_KEY", "dev-secret", is_production=False, dev_secrets=DEV) == "dev-secret"


@pytest.mark.parametrize(
    ("value", "message"),
    [("", "is not set"), ("  ", "is not set"), ("dev-secret", "is a development default")],
)
def test_production_refuses_missing_and_development_secrets(value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=f"X_KEY {message}"):
        secret({"X_KEY": value}, "X_KEY", "dev-secret", is_production=True, dev_secrets=DEV)


def test_production_wants_https_unless_told_otherwise() -> None:
    url = "http://provider.test"
    with pytest.raises(ConfigError, match="not https"):
        provider_base({"BASE": url}, "BASE", "", is_production=True)
    allowed = {"BASE": url, "ALLOW_INSECURE_PROVIDER_URLS": "1"}
    assert provider_base(allowed, "BASE", "", is_production=True) == url
    assert provider_base({}, "BASE", url, is_production=False) == url


@pytest.mark.parametrize(
    ("raw", "message"),
    [("ten", "N must be an integer"), ("0", "N must be 1 to 5 (a reason), got 0"), ("6", "1 to 5")],
)
def test_an_integer_setting_names_itself_and_its_bounds(raw: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        integer({"N": raw}, "N", 3, low=1, high=5, why="a reason")
    assert integer({}, "N", 3, low=1, high=5) == 3
    assert integer({"N": "5"}, "N", 3, low=1) == 5
