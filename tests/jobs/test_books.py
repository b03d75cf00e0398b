"""The books' jobs: yesterday reconciled once it reconciles (a day that did not is read
again each run), any day on request, and a provider that cannot be asked said so."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import Flask

from jobs.books import reconcile_books_job, reconcile_day_job
from models.types import utcnow
from services.statements import reconcile


def test_yesterday_is_reconciled_until_it_reconciles(app: Flask, sandbox: Any) -> None:
    yesterday = (utcnow() - timedelta(days=1)).date()
    with app.app_context():
        sandbox.plant_fee_adjustment(100)
        sandbox.age_balance(86400)  # the adjustment was yesterday's
        assert reconcile_books_job("stripe") == "unreconciled"
        assert reconcile_books_job("stripe") == "unreconciled"  # read again: still red
        assert not reconcile.is_reconciled("stripe", yesterday)
        sandbox.reset()  # (as if the provider had corrected it)
        assert reconcile_books_job("stripe") == "reconciled"
        assert reconcile_books_job("stripe") == "reconciled before"


def test_a_provider_that_cannot_be_asked_leaves_the_day_for_the_next_run(
    app: Flask, sandbox: Any
) -> None:
    sandbox.add_fault("error", status=503, dialect="stripe", endpoint="balance_transactions")
    with app.app_context():
        assert reconcile_day_job("stripe", utcnow().date().isoformat()) == "unreadable"
        assert not reconcile.is_reconciled("stripe", utcnow().date())
