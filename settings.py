"""The app's settings, typed: one frozen dataclass per concern, built once per app from
its config (config.py reads the environment into it, with each value's reason and
bounds; tests override it by the same names). Code reads `settings().payments.lease_s`,
never a string key: a misspelt name fails mypy, not a payment at 3 a.m.

Flask's and its extensions' own keys (SECRET_KEY, SQLALCHEMY_*, MAX_CONTENT_LENGTH,
REDIS_URL) stay in `app.config`, where those libraries read them; each provider's own
settings (STRIPE_*, BRAINTREE_*) are read by its package (providers/<name>/)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask import Flask, current_app

from providers.http import HttpPolicy
from resilience.breaker import BreakerConfig

EXTENSION = "typed_settings"


@dataclass(frozen=True)
class MoneySettings:
    currencies: tuple[str, ...]  # the first is the default (a new wallet's)
    max_amount_minor: int  # no payment or wallet operation is larger


@dataclass(frozen=True)
class PaymentSettings:
    providers: tuple[str, ...]
    default_provider: str
    # How new payments are shared out when the payment page is rendered (provider ->
    # weight; 0: only when asked by name). A payment never moves to another provider.
    weights: Mapping[str, int]
    lease_s: int  # a job holds its movement this long at most
    send_defer_s: int  # a send (charge, refund) provably not made waits this long
    pending_sweep_grace_s: int  # a pending row untouched this long has lost its job
    sca_timeout_s: int  # a customer at their bank this long is given up on
    public_url: str  # where customers reach the shop (their bank sends them back)
    refund_request_window_days: int  # a customer may ask for a refund this long after paying


@dataclass(frozen=True)
class CardTestingSettings:
    window_s: int  # declines are counted this long from the first
    max_per_customer: int  # then the customer's new payments are refused
    max_per_address: int  # ... the address's
    max_per_card: int  # ... and that card's, for that customer


@dataclass(frozen=True)
class ReconcileSettings:
    delays_s: tuple[int, ...]  # between lookups of an unknown outcome
    max_attempts: int  # then a person decides
    refund_processing_lookup_s: int  # a processing refund is looked up this often
    refund_processing_max_days: int  # and sent to review after this long


@dataclass(frozen=True)
class WebhookSettings:
    max_body_bytes: int
    retry_interval_s: int  # events recorded but not applied are tried again this often
    foreign_grace_s: int  # an event finding nothing of ours this long is not ours
    backfill_interval_s: int  # the provider's event list is read this often


@dataclass(frozen=True)
class EmailSettings:
    smtp_url: str
    mail_from: str
    timeout_s: float
    retry_base_s: float
    retry_max_s: float
    retry_horizon_s: float  # an email is given up only this long after it was written
    queue: str  # the notifications bulkhead
    admin_alert_email: str  # the on-call admins


@dataclass(frozen=True)
class AlertSettings:
    unknown_count: int
    unknown_age_s: int


@dataclass(frozen=True)
class ThrottleSettings:
    max_exceptions: int
    window_s: float
    decay_s: float
    jitter_s: float


@dataclass(frozen=True)
class HousekeepingSettings:
    sweep_interval_s: int
    retention_days: int  # settled history leaves the hot tables after this
    call_log_retention_days: int
    books_interval_s: int  # yesterday's books are reconciled (until they are) this often
    books_close_after_days: int  # a reconciled day is closed by the scheduler when this old


@dataclass(frozen=True)
class Settings:
    is_production: bool
    metrics_token: str
    money: MoneySettings
    payments: PaymentSettings
    card_testing: CardTestingSettings
    reconcile: ReconcileSettings
    http: HttpPolicy  # towards every provider
    breakers: Mapping[str, BreakerConfig]  # each provider's, and "smtp"
    webhooks: WebhookSettings
    email: EmailSettings
    alerts: AlertSettings
    throttle: ThrottleSettings
    housekeeping: HousekeepingSettings

    @classmethod
    def from_config(cls, c: Mapping[str, Any]) -> Settings:
        """The typed settings of a Flask config; KeyError names a missing setting."""
        return cls(
            is_production=bool(c["IS_PRODUCTION"]),
            metrics_token=c["METRICS_TOKEN"],
            money=MoneySettings(tuple(c["CURRENCIES"]), int(c["MAX_AMOUNT_MINOR"])),
            payments=PaymentSettings(
                providers=tuple(c["PAYMENTS_PROVIDERS"]),
                default_provider=c["PAYMENTS_DEFAULT_PROVIDER"],
                weights=dict(c["PAYMENTS_PROVIDER_WEIGHTS"]),
                lease_s=int(c["PAYMENT_LEASE_S"]),
                send_defer_s=int(c["SEND_DEFER_S"]),
                pending_sweep_grace_s=int(c["PENDING_SWEEP_GRACE_S"]),
                sca_timeout_s=int(c["SCA_TIMEOUT_S"]),
                public_url=c["PUBLIC_URL"],
                refund_request_window_days=int(c["REFUND_REQUEST_WINDOW_DAYS"]),
            ),
            card_testing=CardTestingSettings(
                window_s=int(c["CARD_TESTING_WINDOW_S"]),
                max_per_customer=int(c["CARD_TESTING_MAX_DECLINES_PER_CUSTOMER"]),
                max_per_address=int(c["CARD_TESTING_MAX_DECLINES_PER_ADDRESS"]),
                max_per_card=int(c["CARD_TESTING_MAX_DECLINES_PER_CARD"]),
            ),
            reconcile=ReconcileSettings(
                delays_s=tuple(int(d) for d in c["RECONCILE_DELAYS_S"]),
                max_attempts=int(c["RECONCILE_MAX_ATTEMPTS"]),
                refund_processing_lookup_s=int(c["REFUND_PROCESSING_LOOKUP_S"]),
                refund_processing_max_days=int(c["REFUND_PROCESSING_MAX_DAYS"]),
            ),
            http=HttpPolicy(
                connect_timeout_s=c["PROVIDER_CONNECT_TIMEOUT_S"],
                read_timeout_s=c["PROVIDER_READ_TIMEOUT_S"],
                call_budget_s=c["PROVIDER_CALL_BUDGET_S"],
                max_retries=c["PROVIDER_MAX_RETRIES"],
                retry_after_cap_s=c["PROVIDER_RETRY_AFTER_CAP_S"],
            ),
            breakers=dict(c["BREAKERS"]),
            webhooks=WebhookSettings(
                max_body_bytes=int(c["WEBHOOK_MAX_BODY_BYTES"]),
                retry_interval_s=int(c["WEBHOOK_RETRY_INTERVAL_S"]),
                foreign_grace_s=int(c["WEBHOOK_FOREIGN_GRACE_S"]),
                backfill_interval_s=int(c["BACKFILL_INTERVAL_S"]),
            ),
            email=EmailSettings(
                smtp_url=c["SMTP_URL"],
                mail_from=c["MAIL_FROM"],
                timeout_s=float(c["SMTP_TIMEOUT_S"]),
                retry_base_s=float(c["EMAIL_RETRY_BASE_S"]),
                retry_max_s=float(c["EMAIL_RETRY_MAX_S"]),
                retry_horizon_s=float(c["EMAIL_RETRY_HORIZON_S"]),
                queue=c["NOTIFICATIONS_QUEUE"],
                admin_alert_email=c["ADMIN_ALERT_EMAIL"],
            ),
            alerts=AlertSettings(int(c["ALERT_UNKNOWN_COUNT"]), int(c["ALERT_UNKNOWN_AGE_S"])),
            throttle=ThrottleSettings(
                max_exceptions=int(c["THROTTLE_MAX_EXCEPTIONS"]),
                window_s=float(c["THROTTLE_WINDOW_S"]),
                decay_s=float(c["THROTTLE_DECAY_S"]),
                jitter_s=float(c["THROTTLE_JITTER_S"]),
            ),
            housekeeping=HousekeepingSettings(
                sweep_interval_s=int(c["SWEEP_INTERVAL_S"]),
                retention_days=int(c["RETENTION_DAYS"]),
                call_log_retention_days=int(c["CALL_LOG_RETENTION_DAYS"]),
                books_interval_s=int(c["BOOKS_RECONCILE_INTERVAL_S"]),
                books_close_after_days=int(c["BOOKS_CLOSE_AFTER_DAYS"]),
            ),
        )


def bind_settings(app: Flask) -> Settings:
    """Build the app's typed settings from its config (after every override)."""
    built = Settings.from_config(app.config)
    app.extensions[EXTENSION] = built
    return built


def settings(app: Flask | None = None) -> Settings:
    """The settings of `app`, or of the current app."""
    built: Settings = (app or current_app).extensions[EXTENSION]
    return built
