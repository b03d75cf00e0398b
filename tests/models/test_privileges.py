"""The books guarded by the database against its own app: the app's role owns nothing
(no DDL, no trigger changes, no TRUNCATE) and may only add rows to the journal and the
evidence; the owner too is refused a change, a deletion or a TRUNCATE by triggers."""

from __future__ import annotations

import pytest
from flask import Flask
from sqlalchemy import Engine, select, text
from sqlalchemy.exc import DBAPIError

from extensions import db
from models import BalanceMatch, ItemOutcome, ProviderBalanceTxn
from models.privileges import APPEND_ONLY, grants
from models.types import utcnow
from services.statements import reconcile
from tests.helpers import charge_payment, committed_payment


def test_the_apps_role_owns_nothing_and_is_not_the_owner(app_ctx: Flask) -> None:
    me = db.session.scalar(text("SELECT current_user"))
    owned = db.session.scalar(
        text("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tableowner = :me"),
        {"me": me},
    )
    assert me == "payments_app" and owned == 0
    assert (
        db.session.scalar(
            text("SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = :me"), {"me": me}
        )
        is False
    )


@pytest.mark.parametrize(
    "statement",
    [
        "ALTER TABLE postings DISABLE TRIGGER postings_balanced",
        "ALTER TABLE journal_entries DISABLE TRIGGER USER",
        "DROP TRIGGER postings_append_only ON postings",
        "ALTER TABLE provider_balance_transactions DROP CONSTRAINT "
        "uq_provider_balance_transactions_provider_txn_id",
        "CREATE TABLE shadow_postings (id int)",
        "CREATE OR REPLACE FUNCTION journal_append_only() RETURNS trigger "
        "LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$",
        "TRUNCATE postings CASCADE",
        "TRUNCATE reconciliation_items",
    ],
)
def test_the_apps_role_changes_no_table_trigger_or_function(app_ctx: Flask, statement: str) -> None:
    with pytest.raises(DBAPIError, match=r"must be owner|permission denied"):
        db.session.execute(text(statement))
    db.session.rollback()


@pytest.mark.parametrize("table", APPEND_ONLY)
def test_no_book_is_emptied_even_by_its_owner(owner_engine: Engine, app: Flask, table: str) -> None:
    with pytest.raises(DBAPIError, match="never emptied"), owner_engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {table} CASCADE"))


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
    app: Flask, sandbox: object, owner_engine: Engine, statement: str
) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
        day = reconcile.reconcile("stripe", utcnow().date())
        assert day.count(ItemOutcome.MATCHED) == 1
        with pytest.raises(DBAPIError, match="permission denied"):
            db.session.execute(text(statement))
        db.session.rollback()
        with pytest.raises(DBAPIError, match="append-only"), owner_engine.begin() as conn:
            conn.execute(text(statement))
        assert len(db.session.scalars(select(BalanceMatch)).all()) == 1
        [txn] = db.session.scalars(select(ProviderBalanceTxn)).all()
        assert txn.fee_minor == 40


def test_the_grants_name_only_the_tables_there_are() -> None:
    older = grants("payments_app", {"payments", "alembic_version"})
    assert not any("journal_entries" in statement for statement in older)
    now = grants("payments_app", {"postings", "book_day_audit", "alembic_version"})
    assert "REVOKE UPDATE, DELETE ON postings, book_day_audit FROM payments_app" in now
    assert any("GRANT UPDATE (status" in statement for statement in now)
    with pytest.raises(ValueError, match="not a role name"):
        grants("app; DROP TABLE postings", set())
