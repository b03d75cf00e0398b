"""`flask books trial-balance`: every account's balance, exit 1 unless they sum to zero."""

from __future__ import annotations

from typing import Any

from flask import Flask
from sqlalchemy import text

from extensions import db
from models import Account, Source, SourceKind
from services.books import journal
from services.books.journal import Leg


def test_the_trial_balance_lists_every_account_and_exits_by_the_sum(
    app: Flask, runner: Any
) -> None:
    with app.app_context():
        legs = [Leg(Account.clearing("stripe"), 1400, "EUR"), Leg(Account.REVENUE, -1400, "EUR")]
        journal.post(Source(SourceKind.PAYMENT, 1), "succeeded", legs)
        db.session.commit()
    clean = runner.invoke(args=["books", "trial-balance"])
    assert clean.exit_code == 0, clean.output
    lines = clean.output.splitlines()
    assert lines[0].split() == ["clearing:stripe", "EUR", "€14.00"]
    assert lines[1].split() == ["revenue", "EUR", "-€14.00"]
    assert lines[-1] == "trial balance: zero"
    with app.app_context():  # a posting written past the database's check (a restore gone wrong)
        db.session.execute(text("ALTER TABLE postings DISABLE TRIGGER postings_balanced"))
        try:
            db.session.execute(
                text(
                    "INSERT INTO postings (entry_id, account, amount_minor, currency) "
                    "SELECT id, 'revenue', -1, 'EUR' FROM journal_entries"
                )
            )
            db.session.commit()
        finally:
            db.session.execute(text("ALTER TABLE postings ENABLE TRIGGER postings_balanced"))
            db.session.commit()
    broken = runner.invoke(args=["books", "trial-balance"])
    assert broken.exit_code == 1
    assert broken.output.splitlines()[-1] == "trial balance: broken {'EUR': -1}"
