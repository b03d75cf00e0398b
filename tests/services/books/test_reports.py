"""The accountant's reads: the trial balance as of a day in debit and credit columns, an
account's ledger with its running balance from its opening balance, a period's postings
with the provider's id of each movement."""

from __future__ import annotations

from datetime import timedelta

import time_machine
from flask import Flask

from extensions import db
from models import Source, SourceKind
from models.types import utcnow
from services.books import journal, reports


def _post(source_id: int, amount: int, days_ago: int) -> None:
    legs = [journal.Leg("clearing:stripe", amount, "EUR"), journal.Leg("revenue", -amount, "EUR")]
    with time_machine.travel(utcnow() - timedelta(days=days_ago)):
        journal.post(Source(SourceKind.PAYMENT, source_id), "succeeded", legs)
        db.session.commit()


def test_the_trial_balance_is_as_of_the_day_asked(app_ctx: Flask) -> None:
    today = utcnow().date()
    _post(1, 1000, days_ago=3)
    _post(2, 250, days_ago=1)
    then = reports.trial_balance(today - timedelta(days=2))
    assert [(r.account, r.debit_minor, r.credit_minor) for r in then] == [
        ("clearing:stripe", 1000, 0),
        ("revenue", 0, 1000),
    ]
    now = reports.trial_balance(today)
    assert sum(r.debit_minor for r in now) == sum(r.credit_minor for r in now) == 1250
    assert reports.trial_balance(today - timedelta(days=5)) == []


def test_an_accounts_ledger_runs_from_its_opening_balance(app_ctx: Flask) -> None:
    today = utcnow().date()
    _post(1, 1000, days_ago=3)
    _post(2, 250, days_ago=1)
    _post(3, 50, days_ago=0)
    opening, lines = reports.ledger("revenue", today - timedelta(days=1), today)
    assert opening == {"EUR": -1000}
    assert [(line.line.amount_minor, line.balance_minor) for line in lines] == [
        (-250, -1250),
        (-50, -1300),
    ]
    assert [line.line.source for line in lines] == ["payment 2 succeeded", "payment 3 succeeded"]
    assert lines[0].line.day == today - timedelta(days=1)
