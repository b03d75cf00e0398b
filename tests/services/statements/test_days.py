"""The reconciled days as the Books page and the command read them, and a requested
day's job: its outcome once a worker ran it, None while none has."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import Flask

from models import ItemOutcome
from models.types import utcnow
from services.statements import days, reconcile
from tests.books_support import a_red_day
from tests.helpers import run_jobs


def test_a_days_items_come_unmatched_first_with_the_days_fees(app: Flask, sandbox: Any) -> None:
    today = a_red_day(app, sandbox)
    with app.app_context():
        reconcile.reconcile("stripe", today - timedelta(days=1))
        assert [(d.day, d.unmatched) for d in days.recent_days()] == [
            (today, 1),
            (today - timedelta(days=1), 0),
        ]
        found = days.day_of("stripe", today)
        assert found is not None
        items = days.items_of(found.id)
        assert [item.outcome for item, _ in items] == [
            ItemOutcome.MISSING_AT_OURS,
            ItemOutcome.MATCHED,
        ]
        assert [txn.type for _, txn in items if txn is not None] == ["adjustment", "charge"]
        assert days.fees_of("stripe", found.id) == {"EUR": 40}


def test_a_requested_day_has_an_outcome_once_a_worker_ran_it(app: Flask, sandbox: Any) -> None:
    with app.app_context():
        job_id = days.request("stripe", utcnow().date())
        assert job_id is not None
        assert days.outcome_of(job_id, 0.3) is None  # no worker yet
    run_jobs(app)
    with app.app_context():
        assert days.outcome_of(job_id, 5) == "reconciled"
        assert days.outcome_of("books-reconcile-nothing", 1) == "failed"
