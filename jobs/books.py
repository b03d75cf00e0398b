"""RQ entry points for the books: the daily reconciliation, on the provider's queue
(it reads that provider's balance), which first closes the days old enough."""

from __future__ import annotations

import logging
from datetime import date, timedelta

from models.types import utcnow
from services.statements import closing, reconcile
from services.statements.provider_balance import BalanceUnreadable
from settings import settings

log = logging.getLogger(__name__)


def reconcile_books_job(provider: str) -> str:
    """Yesterday's (UTC) books against the provider's balance, unless they reconciled
    already (a day that did not is read again each run: late items, a fix)."""
    day = (utcnow() - timedelta(days=1)).date()
    closed = closing.close_old(provider, settings().housekeeping.books_close_after_days)
    if closed:
        log.info("books of %s closed: %s", provider, ", ".join(map(str, closed)))
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
    except closing.DayClosed as exc:
        log.warning("books of %s for %s not reconciled: %s", provider, day_iso, exc)
        return "closed"
    return result.status.value
