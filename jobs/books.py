"""RQ entry points for the books: the daily reconciliation, on the provider's queue
(it reads that provider's balance)."""

from __future__ import annotations

import logging
from datetime import date, timedelta

from models.types import utcnow
from services.statements import reconcile
from services.statements.provider_balance import BalanceUnreadable

log = logging.getLogger(__name__)


def reconcile_books_job(provider: str) -> str:
    """Yesterday's (UTC) books against the provider's balance, unless they reconciled
    already (a day that did not is read again each run: late items, a fix)."""
    day = (utcnow() - timedelta(days=1)).date()
    if reconcile.is_reconciled(provider, day):
        return "reconciled before"
    return reconcile_day_job(provider, day.isoformat())


def reconcile_day_job(provider: str, day_iso: str) -> str:
    """Any day again (`flask books reconcile --date`): read, matched, stored anew."""
    try:
        result = reconcile.reconcile(provider, date.fromisoformat(day_iso))
    except BalanceUnreadable as exc:
        log.warning("books of %s for %s not reconciled now: %s", provider, day_iso, exc)
        return "unreadable"
    return result.status.value
