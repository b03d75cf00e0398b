"""RQ entry points for refunds: take ids, re-read state, safe to run twice."""

from __future__ import annotations

from jobs.throttled import throttled
from services.refunds import sending


@throttled
def refund_job(refund_id: int) -> None:
    sending.send_refund(refund_id)


@throttled
def reconcile_refund_job(refund_id: int) -> None:
    sending.reconcile_refund(refund_id)


def sweep_refunds_job() -> int:
    return sending.sweep_refunds()
