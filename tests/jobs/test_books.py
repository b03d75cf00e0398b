"""The books' jobs: yesterday reconciled once it reconciles (a day that did not is read
again each run), any day on request, and a provider that cannot be asked said so."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import Flask

from jobs.books import reconcile_books_job, reconcile_day_job
from models.types import utcnow
from services.statements import closing, days, reconcile
from tests.helpers import charge_payment, committed_payment


def test_yesterday_is_reconciled_until_it_reconciles(app: Flask, sandbox: Any) -> None:
    yesterday = (utcnow() - timedelta(days=1)).date()
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
        sandbox.age_balance(86400)  # the charge was yesterday's
        # The provider's answer does not add up (its net is not its amount less its fee).
        sandbox.add_fault("tamper", field="amount", value=1, endpoint="balance_transactions")
        assert reconcile_books_job("stripe") == "unreconciled"
        assert reconcile_books_job("stripe") == "unreconciled"  # read again: still red
        assert not reconcile.is_reconciled("stripe", yesterday)
        sandbox.clear_faults()  # (its answer whole again)
        assert reconcile_books_job("stripe") == "reconciled"
        assert reconcile_books_job("stripe") == "reconciled before"


def test_a_provider_that_cannot_be_asked_leaves_the_day_for_the_next_run(
    app: Flask, sandbox: Any
) -> None:
    sandbox.add_fault("error", status=503, dialect="stripe", endpoint="balance_transactions")
    with app.app_context():
        assert reconcile_day_job("stripe", utcnow().date().isoformat()) == "unreadable"
        assert not reconcile.is_reconciled("stripe", utcnow().date())


def test_a_closed_day_is_not_read_again_and_old_days_are_closed(app: Flask, sandbox: Any) -> None:
    today = utcnow().date()
    with app.app_context():
        assert reconcile_day_job("stripe", today.isoformat()) == "reconciled"  # a quiet day
        closing.close("stripe", today, "ops@example.com")
        assert reconcile_day_job("stripe", today.isoformat()) == "closed"
        yesterday = today - timedelta(days=1)
        assert reconcile_day_job("stripe", yesterday.isoformat()) == "reconciled"
    with app.app_context():  # the job closes the days old enough (7 by default): not these
        reconcile_books_job("stripe")
        found = days.day_of("stripe", yesterday)
        assert found is not None and found.closed_at is None
