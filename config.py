"""Configuration: read once, from the environment, with units in the names.

`settings_from_env` is the only place that reads `os.environ` for the app.
Every variable is documented in docs/operations.md and `.env.example`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dev_defaults import DEV_SMTP_URL, dev_urls, production_signs
from providers.registry import PROVIDERS
from providers.settings import ConfigError, integer, number, provider_weights, secret
from providers.smtp import SMTP_GATEWAY
from providers.spec import SettingsContext
from resilience.breaker import BreakerConfig
from resilience.redis_url import is_sentinel_url, parse_sentinel_url

__all__ = ["ConfigError", "settings_from_env"]

PROJECT_DIR = Path(__file__).resolve().parent
INSTANCE_DIR = PROJECT_DIR / "instance"

NOTIFICATIONS_QUEUE = "notifications"

# The session key used only in development; the providers' development secrets live in
# their packages (providers/<name>/__init__.py). Production has none of them.
DEV_SECRET_KEY = "dev-only-not-secret"


# RQ's timeout of one job: longer than the worst case of one job, a charge plus a lookup,
# each within the provider's HTTP budget (PROVIDER_CALL_BUDGET_S, 15 s by default),
# plus database work.
JOB_TIMEOUT_S = 60
DEFAULT_CALL_BUDGET_S = 15.0  # PROVIDER_CALL_BUDGET_S: see settings_from_env
# The circuit breakers' defaults (resilience/breaker.py), each overridable per provider.
BREAKER_DEFAULTS: dict[str, float] = {
    "failure_threshold": 5,  # consecutive failures that open the circuit
    "window_s": 60,  # sliding window of the failure rate
    "min_calls": 10,  # the rate counts only with this many calls in the window
    "failure_rate": 0.5,  # share of failed calls that opens the circuit
    "open_s": 15,  # first open period
    "open_max_s": 300,  # cap of the growing open period
    "slow_call_s": 3,  # a call slower than this counts as a failure (latency kills too)
}


def breaker_settings(**overrides: float) -> dict[str, float]:
    """One breaker's settings at their defaults (probe lease: the default call budget
    plus its margin), with `overrides`: each guarded name's before its own settings
    (BREAKER_<NAME>), and for tools and tests that build a breaker."""
    return {**BREAKER_DEFAULTS, "probe_lease_s": DEFAULT_CALL_BUDGET_S + 5, **overrides}


# Flask signs sessions with SECRET_KEY: a short one can be guessed offline from one cookie.
MIN_SECRET_KEY_BYTES = 32


MIN_RETENTION_DAYS = 35  # past every redelivery, and the 30 days the backfill reaches


CALL_LOG_DAYS = (1, 3650)  # a day at least (0 or less deleted every call at once)


MIN_EMAIL_HORIZON_S = 24 * 3600


def _email_horizon(env: Mapping[str, str]) -> float:
    horizon = number(env, "EMAIL_RETRY_HORIZON_S", 3 * 24 * 3600.0)
    if horizon < MIN_EMAIL_HORIZON_S:
        raise ConfigError(
            f"EMAIL_RETRY_HORIZON_S must be at least {MIN_EMAIL_HORIZON_S} (a day): an SMTP "
            f"outage of a few hours must not lose mail; got {horizon:g}"
        )
    return horizon


MAX_TRUSTED_PROXIES = 5  # more hops than any real front has


def _database_url(env: Mapping[str, str], default: str, name: str = "DATABASE_URL") -> str:
    """PostgreSQL only: every money guarantee rests on its row locks (FOR UPDATE, SKIP
    LOCKED, the one-active-payment index), which SQLite and others do not give."""
    url = env.get(name, "").strip() or default
    if not url:
        return url
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("postgres", "postgresql"):
        return "postgresql+psycopg" + url[len(scheme) :]  # the driver we ship
    if not scheme.startswith("postgresql+"):
        raise ConfigError(
            f"{name} is a {scheme or 'malformed'} URL: PostgreSQL is the only database "
            "(its row locks keep payments and wallets safe). Give a postgresql:// URL, or "
            "unset it for the embedded PostgreSQL of `make run`."
        )
    return url


def _list(env: Mapping[str, str], name: str, default: str) -> list[str]:
    return [item.strip() for item in env.get(name, default).split(",") if item.strip()]


def _public_url(env: Mapping[str, str], is_production: bool, default: str) -> str:
    value = env.get("PUBLIC_URL", "").strip().rstrip("/")
    if not is_production:
        return value or default
    if not value.lower().startswith("https://"):
        raise ConfigError(
            f"PUBLIC_URL={value!r} must be this shop's https:// address in production "
            "(customers return to it from their bank)."
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
    if not is_production and (signs := production_signs(env)):
        # Forgetting APP_ENV must not run a live deployment on the published development
        # secrets (a cookie signed with the dev key opened the admin; a webhook signed
        # with the sandbox's secret paid an order).
        raise ConfigError(
            f"{', '.join(signs)} look like production, but APP_ENV is "
            f"{env.get('APP_ENV') or 'unset'} (development, with its published secrets). "
            "Set APP_ENV=production, or remove them to develop."
        )

    redis_url = env.get("REDIS_URL", "")
    if is_production and not env.get("DATABASE_URL", "").strip():
        raise ConfigError("DATABASE_URL is not set. It is required when APP_ENV=production.")
    defaults = dev_urls(env)
    database_url = _database_url(env, defaults["DATABASE_URL"])
    # The owner runs the migrations; the app's role owns nothing (models/privileges.py).
    # The embedded PostgreSQL's owner when DATABASE_URL is its default too; else none
    # (one role does both, as before: docs/books.md says how to part them).
    owner_default = "" if env.get("DATABASE_URL", "").strip() else defaults["DATABASE_OWNER_URL"]
    database_owner_url = _database_url(env, owner_default, "DATABASE_OWNER_URL")
    if is_production and not redis_url:
        raise ConfigError("REDIS_URL is not set. It is required when APP_ENV=production.")
    if is_sentinel_url(redis_url):
        try:
            parse_sentinel_url(redis_url)
        except ValueError as exc:
            raise ConfigError(f"REDIS_URL is not a usable Sentinel URL: {exc}") from None

    providers = _list(env, "PAYMENTS_PROVIDERS", ",".join(PROVIDERS))
    default_provider = env.get("PAYMENTS_DEFAULT_PROVIDER", providers[0] if providers else "")
    if default_provider not in providers:
        raise ConfigError(
            f"PAYMENTS_DEFAULT_PROVIDER={default_provider!r} is not one of "
            f"PAYMENTS_PROVIDERS={','.join(providers)}"
        )
    sandbox_url = env.get("SANDBOX_URL", defaults["SANDBOX_URL"])
    public_url = _public_url(env, is_production, defaults["PUBLIC_URL"])

    def per_provider(name: str, default: float) -> dict[str, float]:
        # BREAKER_OPEN_S applies to all; BREAKER_OPEN_S_STRIPE to stripe only, and
        # BREAKER_OPEN_S_SMTP to the mail server's breaker (services/notifications/emails.py).
        base = number(env, name, default)
        return {p: number(env, f"{name}_{p.upper()}", base) for p in (*providers, SMTP_GATEWAY)}

    # Total time of one call including retries and backoff: below the RQ job timeout
    # (60 s) and the breaker's probe lease, so a call never outlives either.
    call_budget_s = number(env, "PROVIDER_CALL_BUDGET_S", DEFAULT_CALL_BUDGET_S)
    lease_s = integer(env, "PAYMENT_LEASE_S", JOB_TIMEOUT_S)
    if lease_s < 2 * call_budget_s:
        raise ConfigError(
            f"PAYMENT_LEASE_S={lease_s} must outlive a charge and a lookup "
            f"(2 x PROVIDER_CALL_BUDGET_S = {2 * call_budget_s:g})"
        )
    by_setting = {
        name: per_provider(f"BREAKER_{name.upper()}", default)
        # The probe's lease outlives its call: the call budget plus a margin.
        for name, default in breaker_settings(probe_lease_s=call_budget_s + 5).items()
    }
    # One typed config per guarded name (each provider, and "smtp"): never another's.
    breakers = {
        guarded: BreakerConfig(**{name: values[guarded] for name, values in by_setting.items()})
        for guarded in (*providers, SMTP_GATEWAY)
    }

    unknown = sorted(set(providers) - set(PROVIDERS))
    if unknown:
        raise ConfigError(
            f"PAYMENTS_PROVIDERS names unknown providers: {', '.join(unknown)} "
            f"(known: {', '.join(PROVIDERS)})"
        )
    # Every development secret: production refuses them all, under any name.
    dev_secrets = frozenset({DEV_SECRET_KEY, DEV_SMTP_URL}).union(
        *(s.dev_secrets for s in PROVIDERS.values())
    )
    secret_key = secret(
        env,
        "SECRET_KEY",
        DEV_SECRET_KEY,
        is_production=is_production,
        dev_secrets=dev_secrets,
        min_bytes=MIN_SECRET_KEY_BYTES,
    )
    context = SettingsContext(sandbox_url, is_production, dev_secrets)
    provider_settings: dict[str, Any] = {}
    for provider in providers:  # only the enabled providers' settings are read
        provider_settings.update(PROVIDERS[provider].read_settings(env, context))

    return {
        "APP_ENV": app_env,
        "IS_PRODUCTION": is_production,
        "SECRET_KEY": secret_key,
        "SQLALCHEMY_DATABASE_URI": database_url,
        "DATABASE_OWNER_URL": database_owner_url,
        # A connection is asked whether it is alive before it is lent only when it lay
        # idle (resilience/db_ping.py), not before every checkout (`pool_pre_ping`).
        "SQLALCHEMY_ENGINE_OPTIONS": {},
        "REDIS_URL": redis_url or defaults["REDIS_URL"],
        # Session cookies: never readable from JavaScript, not sent on cross-site
        # POSTs, and HTTPS-only in production.
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "SESSION_COOKIE_SECURE": is_production,
        "REMEMBER_COOKIE_HTTPONLY": True,
        "REMEMBER_COOKIE_SAMESITE": "Lax",
        "REMEMBER_COOKIE_SECURE": is_production,
        # Largest request body accepted (pages, API, webhooks): larger ones get 413.
        "MAX_CONTENT_LENGTH": integer(env, "MAX_CONTENT_LENGTH", 64 * 1024),
        # Webhook bodies over this are refused (413) before anything is parsed.
        "WEBHOOK_MAX_BODY_BYTES": integer(env, "WEBHOOK_MAX_BODY_BYTES", 64 * 1024),
        # Money limits: one payment or wallet operation never exceeds this.
        "MAX_AMOUNT_MINOR": integer(env, "MAX_AMOUNT_MINOR", 1_000_000),
        "CURRENCIES": [c.upper() for c in _list(env, "CURRENCIES", "EUR,USD,GBP")],
        "PAYMENTS_PROVIDERS": providers,
        "PAYMENTS_DEFAULT_PROVIDER": default_provider,
        # Which provider's card entry a payment page shows: "stripe=3,braintree=1"; by
        # default every page the default provider's.
        "PAYMENTS_PROVIDER_WEIGHTS": provider_weights(env, providers, default_provider),
        # HTTP policy towards providers (see providers/http.py for why each value).
        # 2 s to connect: a TCP handshake to a healthy provider takes milliseconds; a
        # provider that cannot accept a connection in 2 s is down, and the request was
        # never sent, so giving up early is free.
        "PROVIDER_CONNECT_TIMEOUT_S": number(env, "PROVIDER_CONNECT_TIMEOUT_S", 2.0),
        # 5 s to read: Stripe answers a confirm in ~0.3-2 s at p99; waiting longer ties
        # up a worker for an answer that reconciliation can fetch later anyway.
        "PROVIDER_READ_TIMEOUT_S": number(env, "PROVIDER_READ_TIMEOUT_S", 5.0),
        "PROVIDER_CALL_BUDGET_S": call_budget_s,
        # Circuit breakers: {setting: {provider: value}} (resilience/breaker.py).
        "BREAKERS": breakers,
        # Job throttling per provider queue (resilience/throttle.py).
        "THROTTLE_MAX_EXCEPTIONS": integer(env, "THROTTLE_MAX_EXCEPTIONS", 5),
        "THROTTLE_WINDOW_S": number(env, "THROTTLE_WINDOW_S", 60),
        "THROTTLE_DECAY_S": number(env, "THROTTLE_DECAY_S", 30),
        "THROTTLE_JITTER_S": number(env, "THROTTLE_JITTER_S", 10),
        # At most this many repeats of a safe request (3 attempts in all).
        "PROVIDER_MAX_RETRIES": integer(env, "PROVIDER_MAX_RETRIES", 2),
        # A provider's Retry-After is honoured up to this; a longer wait is the job's to
        # take (deferral), not a sleeping worker's.
        "PROVIDER_RETRY_AFTER_CAP_S": integer(env, "PROVIDER_RETRY_AFTER_CAP_S", 5),
        # A charge job holds its payment this long at most: the RQ job timeout, longer
        # than any provider call budget, so a live job never loses its lease.
        "PAYMENT_LEASE_S": lease_s,
        # How often the scheduler runs each periodic job (jobs/schedule.py).
        "SWEEP_INTERVAL_S": integer(env, "SWEEP_INTERVAL_S", 30),
        "WEBHOOK_RETRY_INTERVAL_S": integer(env, "WEBHOOK_RETRY_INTERVAL_S", 30),
        # An event that still finds no payment or refund of ours this long after it came
        # is not ours (another integration on the account): set aside as ignored.
        "WEBHOOK_FOREIGN_GRACE_S": integer(
            env, "WEBHOOK_FOREIGN_GRACE_S", 86400, low=600, why="our own sends settle first"
        ),
        "BACKFILL_INTERVAL_S": integer(env, "BACKFILL_INTERVAL_S", 60),
        # Yesterday's books against each provider's balance (services/statements/reconcile.py).
        "BOOKS_RECONCILE_INTERVAL_S": integer(env, "BOOKS_RECONCILE_INTERVAL_S", 3600),
        # Stripe pays a day's charges out about two days later: a week leaves it time.
        "BOOKS_CLOSE_AFTER_DAYS": integer(env, "BOOKS_CLOSE_AFTER_DAYS", 7),
        # Reconciliation of unknown outcomes: growing delays between lookups, then review.
        "RECONCILE_DELAYS_S": [
            int(v) for v in _list(env, "RECONCILE_DELAYS_S", "60,300,900,3600,21600")
        ],
        "RECONCILE_MAX_ATTEMPTS": integer(env, "RECONCILE_MAX_ATTEMPTS", 8),
        # A refund the provider has and says is on its way (processing): looked up this
        # often while its event does not come, and sent to review only after this long.
        "REFUND_PROCESSING_LOOKUP_S": integer(
            env, "REFUND_PROCESSING_LOOKUP_S", 21600, low=60, why="a lookup per minute at most"
        ),
        # A customer may ask for a refund of an order this long after it was paid.
        "REFUND_REQUEST_WINDOW_DAYS": integer(
            env, "REFUND_REQUEST_WINDOW_DAYS", 30, low=0, high=365, why="0: customers never ask"
        ),
        "REFUND_PROCESSING_MAX_DAYS": integer(
            env, "REFUND_PROCESSING_MAX_DAYS", 30, low=1, high=120, why="Stripe: days, not months"
        ),
        # A pending payment untouched this long has lost its job (worker killed, Redis
        # flushed, enqueue failed): the sweep enqueues it again.
        "PENDING_SWEEP_GRACE_S": integer(env, "PENDING_SWEEP_GRACE_S", 30),
        # How long a send (a charge, a refund) is deferred when the provider was provably
        # not reached.
        # CHARGE_DEFER_S: its name before refunds shared it (still read).
        "SEND_DEFER_S": integer(env, "SEND_DEFER_S", integer(env, "CHARGE_DEFER_S", 15)),
        # Where customers reach this shop: the provider sends them back here after 3-D
        # Secure (PUBLIC_URL/payments/<id>/return).
        "PUBLIC_URL": public_url,
        # Card testing (services/payments/attempts.py): card declines counted in a window
        # that starts at the first; past a limit new payments are refused (429) until the
        # window ends. A customer who mistypes a few times stays well under the limits; a
        # script trying stolen numbers does not (Stripe closes accounts that host one).
        "CARD_TESTING_WINDOW_S": integer(env, "CARD_TESTING_WINDOW_S", 600, low=60),
        "CARD_TESTING_MAX_DECLINES_PER_CUSTOMER": integer(
            env, "CARD_TESTING_MAX_DECLINES_PER_CUSTOMER", 10, low=1
        ),
        # An office or a mobile carrier shares an address: higher than one customer's.
        "CARD_TESTING_MAX_DECLINES_PER_ADDRESS": integer(
            env, "CARD_TESTING_MAX_DECLINES_PER_ADDRESS", 20, low=1
        ),
        # One card that keeps declining is not tried again by the same customer.
        "CARD_TESTING_MAX_DECLINES_PER_CARD": integer(
            env, "CARD_TESTING_MAX_DECLINES_PER_CARD", 3, low=1
        ),
        # A payment still waiting for the customer's authentication after this long is
        # cancelled at the provider by the sweep, and fails (unless it succeeded first).
        "SCA_TIMEOUT_S": integer(env, "SCA_TIMEOUT_S", 1800),
        # Every provider request is logged (services/platform/call_log.py) and kept this long.
        "CALL_LOG_RETENTION_DAYS": integer(
            env, "CALL_LOG_RETENTION_DAYS", 30, low=CALL_LOG_DAYS[0], high=CALL_LOG_DAYS[1]
        ),
        # What has been settled this long leaves the hot tables (services/platform/retention.py).
        "RETENTION_DAYS": integer(
            env,
            "RETENTION_DAYS",
            90,
            low=MIN_RETENTION_DAYS,
            why="a provider may redeliver or the backfill find an event that old; "
            "its record must still be there",
        ),
        # Customer emails (services/notifications/emails.py): the SMTP server (smtp://user:pass@
        # host:587 with STARTTLS, smtps://... with TLS; it holds a password, so production
        # requires its own), the sender, where review alerts go, and the retry policy.
        "SMTP_URL": secret(
            env,
            "SMTP_URL",
            defaults["SMTP_URL"],
            is_production=is_production,
            dev_secrets=dev_secrets,
        ),
        "MAIL_FROM": env.get("MAIL_FROM", "Payments Monolith <shop@localhost>"),
        # Who sells, as receipts say it (a receipt names the seller and where it is).
        "SHOP_NAME": env.get("SHOP_NAME", "Payments Monolith"),
        "SHOP_ADDRESS": env.get("SHOP_ADDRESS", "Via dell'Esempio 1, 00100 Roma, Italia"),
        # How many proxies (load balancers) stand in front of the web program and append
        # to X-Forwarded-For / X-Forwarded-Proto: the client's address is read that many
        # hops back (werkzeug's ProxyFix). 0: the headers are ignored, as anyone can send
        # them. Wrong either way, and the login throttle counts the wrong address.
        "TRUSTED_PROXIES": integer(
            env,
            "TRUSTED_PROXIES",
            0,
            low=0,
            high=MAX_TRUSTED_PROXIES,
            why="the proxies in front of the web program",
        ),
        "ADMIN_ALERT_EMAIL": env.get("ADMIN_ALERT_EMAIL", "ops@localhost"),
        # The on-call admins are emailed when this many payments are unknown, or the
        # oldest has been for this long (services/backoffice/alerts.py).
        "ALERT_UNKNOWN_COUNT": integer(env, "ALERT_UNKNOWN_COUNT", 20, low=1, why="a count"),
        "ALERT_UNKNOWN_AGE_S": integer(
            env, "ALERT_UNKNOWN_AGE_S", 3600, low=60, why="lookups take minutes"
        ),
        "SMTP_TIMEOUT_S": number(env, "SMTP_TIMEOUT_S", 10.0),
        # An email is retried with backoff (EMAIL_RETRY_BASE_S doubling, at most
        # EMAIL_RETRY_MAX_S apart) until EMAIL_RETRY_HORIZON_S after it was written (a day
        # at least: an SMTP outage of hours must not lose mail); refusals of the open
        # breaker do not count as attempts.
        "EMAIL_RETRY_BASE_S": number(env, "EMAIL_RETRY_BASE_S", 30.0),
        "EMAIL_RETRY_MAX_S": number(env, "EMAIL_RETRY_MAX_S", 3600.0),
        "EMAIL_RETRY_HORIZON_S": _email_horizon(env),
        # The emails' own queue and worker (a bulkhead); a drill points it elsewhere.
        "NOTIFICATIONS_QUEUE": env.get("NOTIFICATIONS_QUEUE", NOTIFICATIONS_QUEUE),
        # /metrics: with a token, only `Authorization: Bearer <token>` reads it; production
        # without a token does not serve it at all (scrape it on an internal bind).
        "METRICS_TOKEN": env.get("METRICS_TOKEN", ""),
        **provider_settings,
    }
