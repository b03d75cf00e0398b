"""RQ entry points for payments: take ids, re-read state, safe to run twice."""

from __future__ import annotations

from jobs.throttled import throttled
from services import charging, sweeps


@throttled
def charge_payment_job(payment_id: int) -> None:
    charging.charge_payment(payment_id)


@throttled
def reconcile_payment_job(payment_id: int) -> None:
    charging.reconcile_payment(payment_id)


def sweep_pending_payments_job() -> int:
    return sweeps.sweep_pending()


def sweep_unknown_payments_job() -> int:
    return sweeps.sweep_unknown()
