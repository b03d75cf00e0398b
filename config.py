"""Configuration: read once, from the environment, with units in the names.

`settings_from_env` is the only place that reads `os.environ` for the app.
Every variable is documented in README.md and `.env.example`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from providers.stripe import API_VERSION as STRIPE_API_VERSION

PROJECT_DIR = Path(__file__).resolve().parent
INSTANCE_DIR = PROJECT_DIR / "instance"

# The embedded Redis that `make run` starts when REDIS_URL is unset.
EMBEDDED_REDIS_PORT = 6390
DEFAULT_DEV_REDIS_URL = f"redis://127.0.0.1:{EMBEDDED_REDIS_PORT}/0"
DEFAULT_DEV_DATABASE_URL = f"sqlite:///{INSTANCE_DIR / 'payments.db'}"
DEFAULT_SANDBOX_URL = "http://127.0.0.1:8099"

# Secrets used only in development against our own sandbox; production has none.
DEV_SECRET_KEY = "dev-only-not-secret"
DEV_STRIPE_SECRET_KEY = "sk_test_sandbox"
DEV_STRIPE_WEBHOOK_SECRET = "whsec_sandbox"
DEV_ACQUIRER_API_KEY = "acq_test_sandbox"
DEV_ACQUIRER_WEBHOOK_SECRET = "acqwh_sandbox"


# Every development secret: production refuses to start with any of them, under any name.
DEV_SECRETS = frozenset(
    {
        DEV_SECRET_KEY,
        DEV_STRIPE_SECRET_KEY,
        DEV_STRIPE_WEBHOOK_SECRET,
        DEV_ACQUIRER_API_KEY,
        DEV_ACQUIRER_WEBHOOK_SECRET,
    }
)
# Flask signs sessions with SECRET_KEY: a short one can be guessed offline from one cookie.
MIN_SECRET_KEY_BYTES = 32


class ConfigError(RuntimeError):
    """A required setting is missing or malformed; raised at start-up."""


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None


def _list(env: Mapping[str, str], name: str, default: str) -> list[str]:
    return [item.strip() for item in env.get(name, default).split(",") if item.strip()]


def _secret(
    env: Mapping[str, str], name: str, dev_default: str, is_production: bool, min_bytes: int = 1
) -> str:
    value = env.get(name, "")
    if not is_production:
        return value or dev_default
    if not value.strip():
        raise ConfigError(
            f"{name} is not set. It is required when APP_ENV=production; "
            "set it in the environment (never in a file in the repository)."
        )
    if value in DEV_SECRETS or value.strip() in DEV_SECRETS:
        raise ConfigError(f"{name} is a development default; production needs its own secret.")
    if len(value.strip().encode()) < min_bytes:
        raise ConfigError(f"{name} must be at least {min_bytes} bytes (random, not a word).")
    return value


def _provider_base(env: Mapping[str, str], name: str, default: str, is_production: bool) -> str:
    value = env.get(name, default)
    if (
        is_production
        and not value.lower().startswith("https://")
        and env.get("ALLOW_INSECURE_PROVIDER_URLS", "") != "1"
    ):
        raise ConfigError(
            f"{name}={value!r} is not https: production talks to providers over TLS only "
            "(ALLOW_INSECURE_PROVIDER_URLS=1 allows it, for a test environment)."
        )
    return value


def settings_from_env(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Return the Flask config built from `env` (default `os.environ`).

    Raises ConfigError when a production setting is missing or malformed.
    """
    env = os.environ if env is None else env
    app_env = env.get("APP_ENV", "development")
    if app_env not in ("development", "production"):
        raise ConfigError(f"APP_ENV must be 'development' or 'production', got {app_env!r}")
    is_production = app_env == "production"

    database_url = env.get("DATABASE_URL", "")
    redis_url = env.get("REDIS_URL", "")
    if is_production and not database_url:
        raise ConfigError("DATABASE_URL is not set. It is required when APP_ENV=production.")
    if is_production and not redis_url:
        raise ConfigError("REDIS_URL is not set. It is required when APP_ENV=production.")

    providers = _list(env, "PAYMENTS_PROVIDERS", "stripe,acquirer")
    default_provider = env.get("PAYMENTS_DEFAULT_PROVIDER", providers[0] if providers else "")
    if default_provider not in providers:
        raise ConfigError(
            f"PAYMENTS_DEFAULT_PROVIDER={default_provider!r} is not one of "
            f"PAYMENTS_PROVIDERS={','.join(providers)}"
        )
    sandbox_url = env.get("SANDBOX_URL", DEFAULT_SANDBOX_URL)

    def per_provider(name: str, default: float) -> dict[str, float]:
        # BREAKER_OPEN_S applies to all; BREAKER_OPEN_S_STRIPE to stripe only.
        base = _float(env, name, default)
        return {p: _float(env, f"{name}_{p.upper()}", base) for p in providers}

    call_budget_s = _float(env, "PROVIDER_CALL_BUDGET_S", 15.0)
    breakers = {
        "failure_threshold": per_provider("BREAKER_FAILURE_THRESHOLD", 5),
        "window_s": per_provider("BREAKER_WINDOW_S", 60),
        "min_calls": per_provider("BREAKER_MIN_CALLS", 10),
        "failure_rate": per_provider("BREAKER_FAILURE_RATE", 0.5),
        "open_s": per_provider("BREAKER_OPEN_S", 15),
        "open_max_s": per_provider("BREAKER_OPEN_MAX_S", 300),
        "slow_call_s": per_provider("BREAKER_SLOW_CALL_S", 3),
        # The probe's lease outlives its call: the call budget plus a margin.
        "probe_lease_s": per_provider("BREAKER_PROBE_LEASE_S", call_budget_s + 5),
    }

    unknown = sorted(set(providers) - set(PROVIDER_SETTINGS))
    if unknown:
        raise ConfigError(
            f"PAYMENTS_PROVIDERS names unknown providers: {', '.join(unknown)} "
            f"(known: {', '.join(PROVIDER_SETTINGS)})"
        )
    secret_key = _secret(
        env, "SECRET_KEY", DEV_SECRET_KEY, is_production, min_bytes=MIN_SECRET_KEY_BYTES
    )
    provider_settings: dict[str, Any] = {}
    for provider in providers:
        provider_settings.update(PROVIDER_SETTINGS[provider](env, sandbox_url, is_production))

    return {
        "APP_ENV": app_env,
        "IS_PRODUCTION": is_production,
        "SECRET_KEY": secret_key,
        "SQLALCHEMY_DATABASE_URI": database_url or DEFAULT_DEV_DATABASE_URL,
        "SQLALCHEMY_ENGINE_OPTIONS": {"pool_pre_ping": True},
        "REDIS_URL": redis_url or DEFAULT_DEV_REDIS_URL,
        # Session cookies: never readable from JavaScript, not sent on cross-site
        # POSTs, and HTTPS-only in production.
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "SESSION_COOKIE_SECURE": is_production,
        "REMEMBER_COOKIE_HTTPONLY": True,
        "REMEMBER_COOKIE_SAMESITE": "Lax",
        "REMEMBER_COOKIE_SECURE": is_production,
        # Largest request body accepted (pages, API, webhooks): larger ones get 413.
        "MAX_CONTENT_LENGTH": _int(env, "MAX_CONTENT_LENGTH", 64 * 1024),
        # Webhook bodies over this are refused (413) before anything is parsed.
        "WEBHOOK_MAX_BODY_BYTES": _int(env, "WEBHOOK_MAX_BODY_BYTES", 64 * 1024),
        # Money limits: one payment or wallet operation never exceeds this.
        "MAX_AMOUNT_MINOR": _int(env, "MAX_AMOUNT_MINOR", 1_000_000),
        "CURRENCIES": [c.upper() for c in _list(env, "CURRENCIES", "EUR,USD,GBP")],
        "PAYMENTS_PROVIDERS": providers,
        "PAYMENTS_DEFAULT_PROVIDER": default_provider,
        # HTTP policy towards providers (see providers/http.py for why each value).
        "PROVIDER_CONNECT_TIMEOUT_S": _float(env, "PROVIDER_CONNECT_TIMEOUT_S", 2.0),
        "PROVIDER_READ_TIMEOUT_S": _float(env, "PROVIDER_READ_TIMEOUT_S", 5.0),
        "PROVIDER_CALL_BUDGET_S": call_budget_s,
        # Circuit breakers: {setting: {provider: value}} (resilience/breaker.py).
        "BREAKERS": breakers,
        # Job throttling per provider queue (resilience/throttle.py).
        "THROTTLE_MAX_EXCEPTIONS": _int(env, "THROTTLE_MAX_EXCEPTIONS", 5),
        "THROTTLE_WINDOW_S": _float(env, "THROTTLE_WINDOW_S", 60),
        "THROTTLE_DECAY_S": _float(env, "THROTTLE_DECAY_S", 30),
        "THROTTLE_JITTER_S": _float(env, "THROTTLE_JITTER_S", 10),
        # Failover (off when empty): a payment never sent may move to this provider
        # while its own provider's circuit is open.
        "PAYMENTS_FAILOVER_PROVIDER": env.get("PAYMENTS_FAILOVER_PROVIDER", ""),
        "PROVIDER_MAX_RETRIES": _int(env, "PROVIDER_MAX_RETRIES", 2),
        "PROVIDER_RETRY_AFTER_CAP_S": _int(env, "PROVIDER_RETRY_AFTER_CAP_S", 5),
        # Reconciliation of unknown outcomes: growing delays between lookups, then review.
        "RECONCILE_DELAYS_S": [
            int(v) for v in _list(env, "RECONCILE_DELAYS_S", "60,300,900,3600,21600")
        ],
        "RECONCILE_MAX_ATTEMPTS": _int(env, "RECONCILE_MAX_ATTEMPTS", 8),
        # A pending payment untouched this long has lost its job (worker killed, Redis
        # flushed, enqueue failed): the sweep enqueues it again.
        "PENDING_SWEEP_GRACE_S": _int(env, "PENDING_SWEEP_GRACE_S", 30),
        # How long a charge is deferred when the provider was provably not reached.
        "CHARGE_DEFER_S": _int(env, "CHARGE_DEFER_S", 15),
        # /metrics: with a token, only `Authorization: Bearer <token>` reads it; production
        # without a token does not serve it at all (scrape it on an internal bind).
        "METRICS_TOKEN": env.get("METRICS_TOKEN", ""),
        **provider_settings,
    }


def _stripe_settings(
    env: Mapping[str, str], sandbox_url: str, is_production: bool
) -> dict[str, str]:
    return {
        "STRIPE_API_BASE": _provider_base(env, "STRIPE_API_BASE", sandbox_url, is_production),
        "STRIPE_SECRET_KEY": _secret(
            env, "STRIPE_SECRET_KEY", DEV_STRIPE_SECRET_KEY, is_production
        ),
        "STRIPE_WEBHOOK_SECRET": _secret(
            env, "STRIPE_WEBHOOK_SECRET", DEV_STRIPE_WEBHOOK_SECRET, is_production
        ),
        "STRIPE_PAYMENT_METHOD": env.get("STRIPE_PAYMENT_METHOD", "pm_card_visa"),
        # Sent as Stripe-Version on every call: response shapes never follow the
        # account's default. The default is the version the client and sandbox speak.
        "STRIPE_API_VERSION": env.get("STRIPE_API_VERSION", STRIPE_API_VERSION),
    }


def _acquirer_settings(
    env: Mapping[str, str], sandbox_url: str, is_production: bool
) -> dict[str, str]:
    return {
        "ACQUIRER_API_BASE": _provider_base(
            env, "ACQUIRER_API_BASE", f"{sandbox_url}/acquirer", is_production
        ),
        "ACQUIRER_API_KEY": _secret(env, "ACQUIRER_API_KEY", DEV_ACQUIRER_API_KEY, is_production),
        "ACQUIRER_WEBHOOK_SECRET": _secret(
            env, "ACQUIRER_WEBHOOK_SECRET", DEV_ACQUIRER_WEBHOOK_SECRET, is_production
        ),
    }


# Each provider's own settings: only the enabled providers' are read (and required).
PROVIDER_SETTINGS = {"stripe": _stripe_settings, "acquirer": _acquirer_settings}
