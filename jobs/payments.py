"""RQ entry points for payments: take ids, re-read state, safe to run twice."""

from __future__ import annotations

from jobs.throttled import throttled
from services.accounts import provider_customers
from services.backoffice import dashboard
from services.payments import authentication
from services.platform import retention


@throttled
def check_authentication_job(payment_id: int) -> None:
    authentication.check_authentication(payment_id)


@throttled
def cancel_abandoned_job(payment_id: int) -> None:
    authentication.cancel_abandoned(payment_id)


def create_provider_customer_job(customer_id: int, provider: str) -> str | None:
    """Runs on the provider's own queue: it calls that provider. (A job an earlier version
    queued: customers are made by their first payment's send now.)"""
    return provider_customers.create(customer_id, provider)


def sweep_abandoned_payments_job() -> int:
    return authentication.sweep_abandoned()


def retention_job() -> dict[str, int]:
    """What was settled RETENTION_DAYS ago leaves the hot tables (services/platform/retention.py);
    provider calls older than CALL_LOG_RETENTION_DAYS leave the log."""
    return retention.run()


def sample_health_job() -> int:
    """A sample of breakers, queues and the oldest unknown payment, for the overview."""
    return dashboard.sample_health()
