from __future__ import annotations

import pytest

from config import ConfigError, settings_from_env

PRODUCTION = {
    "APP_ENV": "production",
    "SECRET_KEY": "s3cret",
    "DATABASE_URL": "postgresql+psycopg://db/payments",
    "REDIS_URL": "redis://redis:6379/0",
    "STRIPE_SECRET_KEY": "sk_live_x",
    "STRIPE_WEBHOOK_SECRET": "whsec_x",
    "ACQUIRER_API_KEY": "acq_x",
    "ACQUIRER_WEBHOOK_SECRET": "acqwh_x",
}


def test_development_runs_on_embedded_defaults() -> None:
    settings = settings_from_env({})
    assert settings["SQLALCHEMY_DATABASE_URI"].startswith("sqlite:///")
    assert settings["REDIS_URL"].startswith("redis://127.0.0.1:")
    assert settings["PAYMENTS_DEFAULT_PROVIDER"] == "stripe"


def test_production_settings_are_read_from_the_environment() -> None:
    settings = settings_from_env(PRODUCTION)
    assert settings["SECRET_KEY"] == "s3cret"
    assert settings["SESSION_COOKIE_SECURE"] is True


@pytest.mark.parametrize("missing", sorted(set(PRODUCTION) - {"APP_ENV"}))
def test_production_refuses_to_start_without_a_required_setting(missing: str) -> None:
    env = {k: v for k, v in PRODUCTION.items() if k != missing}
    with pytest.raises(ConfigError, match=missing):
        settings_from_env(env)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"APP_ENV": "staging"}, "APP_ENV"),
        ({"MAX_AMOUNT_MINOR": "ten"}, "MAX_AMOUNT_MINOR must be an integer"),
        ({"PROVIDER_READ_TIMEOUT_S": "fast"}, "PROVIDER_READ_TIMEOUT_S must be a number"),
        ({"PAYMENTS_DEFAULT_PROVIDER": "paypal"}, "PAYMENTS_DEFAULT_PROVIDER"),
    ],
)
def test_malformed_settings_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        settings_from_env(env)


def test_session_cookies_are_httponly_and_samesite() -> None:
    settings = settings_from_env({})
    assert settings["SESSION_COOKIE_HTTPONLY"] is True
    assert settings["SESSION_COOKIE_SAMESITE"] == "Lax"


def test_breaker_settings_can_be_set_per_provider() -> None:
    settings = settings_from_env({"BREAKER_OPEN_S": "20", "BREAKER_OPEN_S_ACQUIRER": "90"})
    assert settings["BREAKERS"]["open_s"] == {"stripe": 20.0, "acquirer": 90.0}
    # The probe's lease outlives a whole provider call, retries included.
    assert settings["BREAKERS"]["probe_lease_s"]["stripe"] > settings["PROVIDER_CALL_BUDGET_S"]


def test_the_job_timeout_outlives_a_provider_call() -> None:
    from jobs.queues import JOB_TIMEOUT_S

    settings = settings_from_env({})
    assert 2 * settings["PROVIDER_CALL_BUDGET_S"] < JOB_TIMEOUT_S  # a charge plus a lookup
