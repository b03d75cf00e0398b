from __future__ import annotations

from typing import Any

import pytest

from config import DEV_SECRET_KEY, ConfigError, settings_from_env
from providers.braintree import DEV_MERCHANT_ID as DEV_BRAINTREE_MERCHANT_ID
from providers.braintree import DEV_PRIVATE_KEY as DEV_BRAINTREE_PRIVATE_KEY
from providers.stripe import DEV_SECRET_KEY as DEV_STRIPE_SECRET_KEY
from providers.stripe import DEV_WEBHOOK_SECRET as DEV_STRIPE_WEBHOOK_SECRET
from tests.config_support import PRODUCTION


def test_development_runs_on_embedded_defaults() -> None:
    settings = settings_from_env({})
    # The app as a role that owns nothing; the migrations as the cluster's owner.
    assert settings["SQLALCHEMY_DATABASE_URI"] == (
        "postgresql+psycopg://payments_app@127.0.0.1:5439/payments"
    )
    assert settings["DATABASE_OWNER_URL"] == "postgresql+psycopg://postgres@127.0.0.1:5439/payments"
    assert settings["REDIS_URL"] == "redis://127.0.0.1:6390/0"
    assert settings["PAYMENTS_DEFAULT_PROVIDER"] == "stripe"


def test_the_embedded_defaults_follow_the_ports_of_make_run() -> None:
    settings = settings_from_env(
        {
            "WEB_PORT": "5001",
            "SANDBOX_PORT": "8100",
            "REDIS_PORT": "6400",
            "POSTGRES_PORT": "5500",
            "MAIL_SINK_PORT": "8030",
        }
    )
    assert settings["SQLALCHEMY_DATABASE_URI"].endswith("@127.0.0.1:5500/payments")
    assert settings["REDIS_URL"] == "redis://127.0.0.1:6400/0"
    assert settings["PUBLIC_URL"] == "http://127.0.0.1:5001"
    assert settings["STRIPE_API_BASE"] == "http://127.0.0.1:8100"
    assert settings["SMTP_URL"] == "smtp://127.0.0.1:8030"


@pytest.mark.parametrize(
    "url", ["sqlite:///x.db", "sqlite://", "mysql://root@localhost/shop", "payments.db", "://"]
)
def test_postgresql_is_the_only_database(url: str) -> None:
    env = {"DATABASE_URL": url}
    with pytest.raises(ConfigError, match=r"DATABASE_URL .*PostgreSQL is the only database"):
        settings_from_env(env)
    with pytest.raises(ConfigError, match="PostgreSQL is the only database"):
        settings_from_env({**PRODUCTION, **env})


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://u@db/shop", "postgresql+psycopg://u@db/shop"),
        ("postgres://u@db/shop", "postgresql+psycopg://u@db/shop"),
        ("postgresql+psycopg://u@db/shop", "postgresql+psycopg://u@db/shop"),
    ],
)
def test_postgresql_urls_use_the_driver_we_ship(url: str, expected: str) -> None:
    assert settings_from_env({"DATABASE_URL": url})["SQLALCHEMY_DATABASE_URI"] == expected
    owned = settings_from_env(
        {"DATABASE_URL": "postgresql://app@db/shop", "DATABASE_OWNER_URL": url}
    )
    assert owned["DATABASE_OWNER_URL"] == expected


def test_a_database_of_ones_own_is_migrated_by_its_role_unless_an_owner_is_given() -> None:
    """No embedded owner beside a DATABASE_URL of one's own: that role runs the migrations."""
    assert settings_from_env({"DATABASE_URL": "postgresql://u@db/shop"})["DATABASE_OWNER_URL"] == ""
    with pytest.raises(ConfigError, match="DATABASE_OWNER_URL is a mysql URL"):
        settings_from_env(
            {"DATABASE_URL": "postgresql://u@db/x", "DATABASE_OWNER_URL": "mysql://o@db/x"}
        )


def test_production_settings_are_read_from_the_environment() -> None:
    settings = settings_from_env(PRODUCTION)
    assert settings["SECRET_KEY"] == PRODUCTION["SECRET_KEY"]
    assert settings["SESSION_COOKIE_SECURE"] is True


@pytest.mark.parametrize("missing", sorted(set(PRODUCTION) - {"APP_ENV", "STRIPE_API_BASE"}))
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
        ({"STRIPE_SETTLE_S": "soon"}, "STRIPE_SETTLE_S must be a number"),
        ({"WEB_PORT": "http"}, "WEB_PORT must be an integer"),
        ({"POSTGRES_PORT": "70000"}, "POSTGRES_PORT must be a TCP port"),
        ({"TRUSTED_PROXIES": "9"}, "TRUSTED_PROXIES must be 0 to 5"),
        ({"EMAIL_RETRY_HORIZON_S": "3600"}, "EMAIL_RETRY_HORIZON_S must be at least 86400"),
        ({"TRUSTED_PROXIES": "-1"}, "TRUSTED_PROXIES must be 0 to 5"),
        ({"STRIPE_SEARCH_LAG_S": "120"}, "STRIPE_SEARCH_LAG_S is gone: search never proves"),
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
    settings = settings_from_env(
        {"BREAKER_OPEN_S": "20", "BREAKER_OPEN_S_BRAINTREE": "90", "BREAKER_OPEN_S_SMTP": "45"}
    )
    # The mail server's breaker has settings of its own, never the first provider's.
    breakers = settings["BREAKERS"]
    assert {name: b.open_s for name, b in breakers.items()} == {
        "stripe": 20.0,
        "braintree": 90.0,
        "smtp": 45.0,
    }
    assert breakers["stripe"].failure_threshold == breakers["smtp"].failure_threshold  # defaults
    # The probe's lease outlives a whole provider call, retries included.
    assert breakers["stripe"].probe_lease_s > settings["PROVIDER_CALL_BUDGET_S"]


def test_the_job_timeout_outlives_a_provider_call() -> None:
    from services.platform.queues import JOB_TIMEOUT_S

    settings = settings_from_env({})
    assert 2 * settings["PROVIDER_CALL_BUDGET_S"] < JOB_TIMEOUT_S  # a charge plus a lookup


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("SECRET_KEY", DEV_SECRET_KEY, "SECRET_KEY is a development default"),
        ("SECRET_KEY", "x", "SECRET_KEY must be at least 32 bytes"),
        ("SECRET_KEY", "   ", "SECRET_KEY is not set"),
        ("SECRET_KEY", " " * 40, "SECRET_KEY is not set"),
        ("SECRET_KEY", "short-but-not-empty", "SECRET_KEY must be at least 32 bytes"),
        ("STRIPE_SECRET_KEY", DEV_STRIPE_SECRET_KEY, "STRIPE_SECRET_KEY is a development"),
        ("STRIPE_WEBHOOK_SECRET", DEV_STRIPE_WEBHOOK_SECRET, "STRIPE_WEBHOOK_SECRET is a dev"),
        # A development secret under another name is still a development secret.
        ("STRIPE_WEBHOOK_SECRET", DEV_BRAINTREE_PRIVATE_KEY, "STRIPE_WEBHOOK_SECRET is a dev"),
        ("BRAINTREE_PRIVATE_KEY", DEV_BRAINTREE_PRIVATE_KEY, "BRAINTREE_PRIVATE_KEY is a dev"),
        ("BRAINTREE_PUBLIC_KEY", DEV_STRIPE_SECRET_KEY, "BRAINTREE_PUBLIC_KEY is a dev"),
        ("BRAINTREE_MERCHANT_ID", DEV_BRAINTREE_MERCHANT_ID, "BRAINTREE_MERCHANT_ID is a dev"),
        ("BRAINTREE_PRIVATE_KEY_PREVIOUS", DEV_BRAINTREE_PRIVATE_KEY, "_PREVIOUS is a dev"),
        ("BRAINTREE_CURRENCY", "euro", "BRAINTREE_CURRENCY must be"),
        ("STRIPE_API_BASE", "http://127.0.0.1:8099", "STRIPE_API_BASE='http://127.0.0.1:8099' is "),
        ("BRAINTREE_API_BASE", "http://bt.example", "BRAINTREE_API_BASE='http://bt"),
    ],
)
def test_production_refuses_development_secrets_and_plain_http(
    name: str, value: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        settings_from_env({**PRODUCTION, name: value})


def test_production_leaves_provider_urls_to_the_sandbox_only_when_told() -> None:
    env = {k: v for k, v in PRODUCTION.items() if not k.endswith("_API_BASE")}
    with pytest.raises(ConfigError, match="STRIPE_API_BASE"):
        settings_from_env(env)
    settings = settings_from_env({**env, "ALLOW_INSECURE_PROVIDER_URLS": "1"})
    assert settings["STRIPE_API_BASE"].startswith("http://")


def test_production_asks_only_for_the_enabled_providers_settings() -> None:
    env = {k: v for k, v in PRODUCTION.items() if not k.startswith("BRAINTREE_")}
    settings = settings_from_env({**env, "PAYMENTS_PROVIDERS": "stripe"})
    assert "BRAINTREE_PRIVATE_KEY" not in settings
    with pytest.raises(ConfigError, match="BRAINTREE_"):
        settings_from_env(env)  # both providers enabled (the default)


def test_provider_weights_default_to_the_default_provider_and_are_checked() -> None:
    assert settings_from_env({})["PAYMENTS_PROVIDER_WEIGHTS"] == {"stripe": 1, "braintree": 0}
    weights = settings_from_env({"PAYMENTS_PROVIDER_WEIGHTS": "braintree=2, stripe=1"})
    assert weights["PAYMENTS_PROVIDER_WEIGHTS"] == {"stripe": 1, "braintree": 2}
    for bad in ("paypal=1", "stripe=-1", "stripe", "stripe=0,braintree=0"):
        with pytest.raises(ConfigError, match="PAYMENTS_PROVIDER_WEIGHTS"):
            settings_from_env({"PAYMENTS_PROVIDER_WEIGHTS": bad})
    with pytest.raises(ConfigError, match="PAYMENTS_FAILOVER_PROVIDER is gone"):
        settings_from_env({"PAYMENTS_FAILOVER_PROVIDER": "braintree"})


def test_unknown_provider_names_are_refused() -> None:
    with pytest.raises(ConfigError, match="unknown providers: paypal"):
        settings_from_env({"PAYMENTS_PROVIDERS": "stripe,paypal"})


@pytest.mark.usefixtures("app")
def test_metrics_need_the_token_when_one_is_set(make_app: Any) -> None:
    client = make_app(METRICS_TOKEN="scrape-token-123").test_client()
    assert client.get("/metrics").status_code == 401
    wrong = client.get("/metrics", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    right = client.get("/metrics", headers={"Authorization": "Bearer scrape-token-123"})
    assert right.status_code == 200 and b"provider_calls_total" in right.data


def test_production_without_a_metrics_token_does_not_serve_metrics(app: Any, make_app: Any) -> None:
    app = make_app(IS_PRODUCTION=True, METRICS_TOKEN="")
    assert app.test_client().get("/metrics").status_code == 404


def test_a_lease_shorter_than_a_job_is_refused() -> None:
    with pytest.raises(ConfigError, match="PAYMENT_LEASE_S=20 must outlive"):
        settings_from_env({"PAYMENT_LEASE_S": "20"})


def test_production_card_entry_is_stripes_own_over_https() -> None:
    settings = settings_from_env(PRODUCTION)
    assert settings["STRIPE_JS_URL"] == "https://js.stripe.com/v3"
    assert settings["STRIPE_PUBLISHABLE_KEY"] == "pk_live_x"
    assert settings["PUBLIC_URL"] == "https://shop.example"
    development = settings_from_env({})
    assert development["STRIPE_JS_URL"] == "http://127.0.0.1:8099/js/v3"  # the sandbox's
    assert development["PUBLIC_URL"] == "http://127.0.0.1:5000"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("STRIPE_PUBLISHABLE_KEY", "sk_live_x", "must be a publishable key"),
        ("STRIPE_PUBLISHABLE_KEY", "pk_test_sandbox", "is a development default"),
        ("STRIPE_JS_URL", "http://js.example/v3", "is not https"),
        ("PUBLIC_URL", "http://shop.example", "must be this shop's https:// address"),
        ("PUBLIC_URL", "", "must be this shop's https:// address"),
    ],
)
def test_production_refuses_a_card_entry_that_would_leak(
    name: str, value: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        settings_from_env({**PRODUCTION, name: value})


def test_a_secret_key_is_never_handed_to_browsers_even_in_development() -> None:
    with pytest.raises(ConfigError, match="must be a publishable key"):
        settings_from_env({"STRIPE_PUBLISHABLE_KEY": "sk_test_sandbox"})


@pytest.mark.parametrize(
    "live",
    [
        {"STRIPE_SECRET_KEY": "sk_live_51abc"},
        {"STRIPE_PUBLISHABLE_KEY": "pk_live_51abc"},
        {"STRIPE_API_BASE": "https://api.stripe.com"},
        {"PUBLIC_URL": "https://shop.example"},
    ],
    ids=["live secret key", "live publishable key", "https provider", "https shop"],
)
def test_a_live_looking_deployment_without_app_env_does_not_start(live: dict[str, str]) -> None:
    """The reported hole: with APP_ENV forgotten, sk_live_ and https URLs ran on the
    published development secrets."""
    for app_env in ({}, {"APP_ENV": "development"}):
        with pytest.raises(ConfigError, match=f"{next(iter(live))} look like production"):
            settings_from_env({**live, **app_env, "DATABASE_URL": "postgresql://db/shop"})
    assert settings_from_env({**PRODUCTION, **live})["IS_PRODUCTION"] is True


def test_development_on_loopback_and_the_sandbox_still_starts() -> None:
    local = {"STRIPE_API_BASE": "https://127.0.0.1:8099", "PUBLIC_URL": "http://shop.test"}
    assert settings_from_env(local)["IS_PRODUCTION"] is False


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"STRIPE_SECRET_KEY": "sk_test_51abc"}, "must be a live key"),
        ({"STRIPE_PUBLISHABLE_KEY": "pk_test_51abc"}, "of the same mode as STRIPE_SECRET_KEY"),
        ({"STRIPE_WEBHOOK_SECRET": "not-a-stripe-secret"}, "must be a Stripe webhook signing"),
        ({"STRIPE_WEBHOOK_SECRET_PREVIOUS": "whsec_sandbox"}, "is a development default"),
        ({"STRIPE_WEBHOOK_SECRET_PREVIOUS": "old-secret"}, "must be a Stripe webhook signing"),
        (
            {"STRIPE_TEST_MODE": "true", "STRIPE_PUBLISHABLE_KEY": "pk_test_51abc"},
            "must be a test key",
        ),
    ],
)
def test_production_refuses_stripe_keys_that_cannot_work_together(
    override: dict[str, str], message: str
) -> None:
    """Mismatched modes make every confirm a 400 that reads like a card decline."""
    with pytest.raises(ConfigError, match=message):
        settings_from_env({**PRODUCTION, **override})


def test_production_takes_test_keys_only_when_test_mode_says_so() -> None:
    test_mode = {
        **PRODUCTION,
        "STRIPE_TEST_MODE": "true",
        "STRIPE_SECRET_KEY": "sk_test_51abc",
        "STRIPE_PUBLISHABLE_KEY": "pk_test_51abc",
        "STRIPE_WEBHOOK_SECRET_PREVIOUS": "whsec_old",
    }
    settings = settings_from_env(test_mode)
    assert settings["STRIPE_SECRET_KEY"] == "sk_test_51abc"
    assert settings["STRIPE_WEBHOOK_SECRET_PREVIOUS"] == "whsec_old"
    assert settings_from_env({**PRODUCTION, "STRIPE_SECRET_KEY": "rk_live_1"})  # restricted


def test_the_send_deferral_is_read_by_its_name_and_by_its_older_one() -> None:
    assert settings_from_env({})["SEND_DEFER_S"] == 15
    assert settings_from_env({"CHARGE_DEFER_S": "7"})["SEND_DEFER_S"] == 7  # a deployment's
    assert settings_from_env({"CHARGE_DEFER_S": "7", "SEND_DEFER_S": "9"})["SEND_DEFER_S"] == 9
