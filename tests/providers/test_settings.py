"""Settings helpers shared by config.py and the providers: secrets and base URLs."""

from __future__ import annotations

import pytest

from providers.settings import ConfigError, provider_base, secret

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
