"""A reconciled day closed: its result and items never change again (the database
refuses it, migration 0034), later findings go to the open day. Reopening needs a
reason; both are rows of book_day_audit, the day's audit trail, which alone close and
reopen it. The scheduler closes a reconciled day once it is `books_close_after_days` old
(Stripe pays a day out about two days later)."""

from __future__ import annotations

from datetime import date, timedelta

from sqlalchemy import select
from sqlalchemy.exc import DBAPIError

from extensions import db
from models import BookDayAudit, DayAction, DayStatus, ReconciliationDay
from models.types import utcnow
from services.statements import days

SCHEDULER = "the scheduler"


class DayClosed(Exception):
    """The day is closed: it is not reconciled again until it is reopened."""


class CannotClose(ValueError):
    """Why a day cannot be closed or reopened now (said to the person who asked)."""


def refuse_if_closed(provider: str, day: date) -> None:
    found = days.day_of(provider, day)
    if found is not None and found.closed_at is not None:
        raise DayClosed(
            f"{provider} {day} was closed on {found.closed_at:%Y-%m-%d %H:%M} UTC by "
            f"{found.closed_by}: reopen it with a reason first (flask books reopen)"
        )


def close(provider: str, day: date, actor: str) -> ReconciliationDay:
    """Close a reconciled day (commits); CannotClose says why not."""
    found = days.day_of(provider, day)
    if found is None:
        raise CannotClose(f"{provider} {day} was never reconciled")
    if found.closed_at is not None:
        raise CannotClose(f"{provider} {day} is closed already (by {found.closed_by})")
    if found.status != DayStatus.RECONCILED:
        raise CannotClose(f"{provider} {day} does not reconcile: it cannot be closed")
    return _audit(found, DayAction.CLOSED, actor, None)


def reopen(provider: str, day: date, actor: str, reason: str) -> ReconciliationDay:
    """Reopen a closed day, saying why (commits); CannotClose says why not."""
    found = days.day_of(provider, day)
    if found is None or found.closed_at is None:
        raise CannotClose(f"{provider} {day} is not closed")
    if len(reason.strip()) < 3:
        raise CannotClose("say why the day is reopened (3 characters or more)")
    return _audit(found, DayAction.REOPENED, actor, reason.strip()[:500])


def close_old(provider: str, after_days: int) -> list[date]:
    """The scheduler's close: every reconciled day of the provider at least `after_days`
    old that is still open (commits); the days closed."""
    last = (utcnow() - timedelta(days=after_days)).date()
    old = db.session.scalars(
        select(ReconciliationDay).where(
            ReconciliationDay.provider == provider,
            ReconciliationDay.day <= last,
            ReconciliationDay.status == DayStatus.RECONCILED,
            ReconciliationDay.closed_at.is_(None),
        )
    ).all()
    return [_audit(found, DayAction.CLOSED, SCHEDULER, None).day for found in old]


def history(day_id: int) -> list[BookDayAudit]:
    return list(
        db.session.scalars(
            select(BookDayAudit).where(BookDayAudit.day_id == day_id).order_by(BookDayAudit.id)
        )
    )


def _audit(
    found: ReconciliationDay, action: DayAction, actor: str, reason: str | None
) -> ReconciliationDay:
    db.session.add(BookDayAudit(day_id=found.id, action=action, actor=actor[:120], reason=reason))
    try:
        db.session.commit()  # the row's trigger closes or reopens the day
    except DBAPIError as exc:  # a run or a person got there first
        db.session.rollback()
        raise CannotClose(str(exc.orig).splitlines()[0]) from None
    db.session.refresh(found)
    return found
