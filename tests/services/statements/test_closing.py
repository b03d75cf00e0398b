"""A day closed: nothing of it changes, whoever asks, until it is reopened with a reason;
both are in its audit trail. The scheduler closes the days old enough."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from extensions import db
from models import DayAction, DayStatus
from models.types import utcnow
from services.books import journal
from services.statements import closing, days, reconcile
from tests.books_support import a_red_day
from tests.helpers import charge_payment, committed_payment


def _reconciled_today(app: Flask) -> date:
    payment_id = committed_payment(app)
    today = utcnow().date()
    with app.app_context():
        charge_payment(payment_id)
        assert reconcile.reconcile("stripe", today).status == DayStatus.RECONCILED
    return today


def test_a_closed_day_is_not_reconciled_again_until_reopened_with_a_reason(
    app: Flask, sandbox: Any
) -> None:
    today = _reconciled_today(app)
    with app.app_context():
        closed = closing.close("stripe", today, "ops@example.com")
        assert closed.closed_by == "ops@example.com" and closed.closed_at is not None
        with pytest.raises(closing.DayClosed, match=r"closed on .* by ops@example.com"):
            reconcile.reconcile("stripe", today)
        with pytest.raises(closing.CannotClose, match="closed already"):
            closing.close("stripe", today, "ops@example.com")
        with pytest.raises(closing.CannotClose, match="say why"):
            closing.reopen("stripe", today, "ops@example.com", "  ")
        opened = closing.reopen("stripe", today, "boss@example.com", "a fee corrected late")
        assert opened.closed_at is None
        trail = closing.history(opened.id)
        assert [(a.action, a.actor, a.reason) for a in trail] == [
            (DayAction.CLOSED, "ops@example.com", None),
            (DayAction.REOPENED, "boss@example.com", "a fee corrected late"),
        ]
        assert reconcile.reconcile("stripe", today).status == DayStatus.RECONCILED


def test_a_day_that_does_not_reconcile_is_not_closed(app: Flask, sandbox: Any) -> None:
    day = a_red_day(app, sandbox)
    with app.app_context(), pytest.raises(closing.CannotClose, match="does not reconcile"):
        closing.close("stripe", day, "ops@example.com")


@pytest.mark.parametrize(
    ("statement", "refused"),
    [
        ("UPDATE reconciliation_days SET closed_at = NULL", "permission denied"),
        ("UPDATE reconciliation_days SET status = 'unreconciled'", "is closed"),
        ("DELETE FROM reconciliation_items", "is closed"),
        ("UPDATE reconciliation_items SET detail = 'x'", "is closed"),
        (
            "INSERT INTO book_day_audit (day_id, action, actor, at) "
            "SELECT id, 'reopened', 'x', now() FROM reconciliation_days",
            "reopen_reason",
        ),
        ("DELETE FROM book_day_audit", "permission denied"),
    ],
)
def test_nothing_of_a_closed_day_changes_for_the_app(
    app: Flask, sandbox: Any, statement: str, refused: str
) -> None:
    today = _reconciled_today(app)
    with app.app_context():
        closing.close("stripe", today, "ops@example.com")
        with pytest.raises(DBAPIError, match=refused):
            db.session.execute(text(statement))
        db.session.rollback()
        assert closing.history(reconcile_day_id(today))[0].action == DayAction.CLOSED


def test_nor_for_the_owner_past_the_audit_trail(
    app: Flask, sandbox: Any, owner_engine: Engine
) -> None:
    today = _reconciled_today(app)
    with app.app_context():
        closing.close("stripe", today, "ops@example.com")
    for statement in (
        "UPDATE reconciliation_days SET closed_at = NULL",
        "DELETE FROM reconciliation_items",
    ):
        with (
            pytest.raises(DBAPIError, match=r"book_day_audit|is closed"),
            owner_engine.begin() as c,
        ):
            c.execute(text(statement))


def test_the_scheduler_closes_reconciled_days_old_enough(app: Flask, sandbox: Any) -> None:
    today = _reconciled_today(app)
    with app.app_context():
        assert closing.close_old("stripe", after_days=1) == []  # today: not old enough
        assert closing.close_old("stripe", after_days=0) == [today]
        assert closing.history(reconcile_day_id(today))[0].actor == closing.SCHEDULER
        assert journal.trial_balance() == {"EUR": 0}


def test_the_commands_close_and_reopen_and_say_why_not(
    app: Flask, sandbox: Any, runner: Any
) -> None:
    today = _reconciled_today(app).isoformat()
    args = ["books", "close", "--date", today, "--by", "ops@example.com"]
    assert runner.invoke(args=args).exit_code == 0
    again = runner.invoke(args=args)
    assert again.exit_code == 1 and "closed already" in again.output
    reopen = ["books", "reopen", "--date", today, "--by", "ops@example.com"]
    opened = runner.invoke(args=[*reopen, "--reason", "late fee"])
    assert opened.exit_code == 0 and "reopened by ops@example.com: late fee" in opened.output
    yesterday = (utcnow().date() - timedelta(days=1)).isoformat()
    never = runner.invoke(args=["books", "close", "--date", yesterday, "--by", "x"])
    assert never.exit_code == 1 and "never reconciled" in never.output


def reconcile_day_id(day: date) -> int:
    found = days.day_of("stripe", day)
    assert found is not None
    return found.id
