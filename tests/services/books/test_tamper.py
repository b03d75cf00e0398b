"""The books guarded by the database against its own app: nothing posted or read as
evidence is changed, deleted or emptied, whoever asks."""

from __future__ import annotations

import pytest
from flask import Flask
from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError

from extensions import db
from models import BalanceMatch, ItemOutcome, ProviderBalanceTxn
from models.types import utcnow
from services.statements import reconcile
from tests.helpers import charge_payment, committed_payment

JOURNAL = ("journal_entries", "postings", "ledger_entries")
EVIDENCE = (
    "provider_balance_transactions",
    "balance_matches",
    "payout_contents",
    "provider_balance_corrections",
)


@pytest.mark.parametrize("table", JOURNAL + EVIDENCE)
def test_no_book_is_emptied(app_ctx: Flask, table: str) -> None:
    with pytest.raises(DBAPIError, match="never emptied"):
        db.session.execute(text(f"TRUNCATE {table} CASCADE"))
    db.session.rollback()


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE provider_balance_transactions SET fee_minor = fee_minor + 1",
        "DELETE FROM provider_balance_transactions",
        "UPDATE balance_matches SET entry_id = entry_id",
        "DELETE FROM balance_matches",
    ],
)
def test_the_evidence_of_a_day_is_never_rewritten(
    app: Flask, sandbox: object, statement: str
) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
        day = reconcile.reconcile("stripe", utcnow().date())
        assert day.count(ItemOutcome.MATCHED) == 1
        with pytest.raises(DBAPIError, match="append-only"):
            db.session.execute(text(statement))
        db.session.rollback()
        assert len(db.session.scalars(select(BalanceMatch)).all()) == 1
        [txn] = db.session.scalars(select(ProviderBalanceTxn)).all()
        assert txn.fee_minor == 40
