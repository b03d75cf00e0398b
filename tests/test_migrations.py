"""The migrations are the schema: after `upgrade`, autogenerate finds nothing to add."""

from __future__ import annotations

import tempfile
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from flask import Flask
from flask_migrate import downgrade, upgrade
from sqlalchemy import Column, Integer, MetaData, inspect, text
from sqlalchemy.exc import IntegrityError

from extensions import db


def _drift(app: Flask, metadata: MetaData | None = None) -> list:
    with app.app_context(), db.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        return compare_metadata(context, metadata if metadata is not None else db.metadata)


def test_upgraded_database_matches_models(app: Flask) -> None:
    # The session database was created by `upgrade` (PostgreSQL when available).
    assert _drift(app) == []


def test_upgrade_on_empty_sqlite_matches_models(make_app: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sqlite_app = make_app(SQLALCHEMY_DATABASE_URI=f"sqlite:///{tmp}/drift.db")
        with sqlite_app.app_context():
            upgrade()
            tables = set(inspect(db.engine).get_table_names())
        assert {"payments", "wallets", "ledger_entries", "processed_webhooks"} <= tables
        assert _drift(sqlite_app) == []
        with sqlite_app.app_context():
            db.engine.dispose()


def test_drift_is_detected_when_a_model_changes(app: Flask) -> None:
    # Guard against a comparison that cannot fail: a column the migration lacks shows up.
    changed = MetaData(naming_convention=db.metadata.naming_convention)
    for table in db.metadata.tables.values():
        table.to_metadata(changed)
    changed.tables["products"].append_column(Column("weight_grams", Integer))
    diffs = _drift(app, changed)
    assert [(d[0], d[2], d[3].name) for d in diffs] == [("add_column", "products", "weight_grams")]


@pytest.mark.postgres
def test_session_database_is_postgres(app: Flask) -> None:
    assert app.config["SQLALCHEMY_DATABASE_URI"].startswith("postgresql")


def test_the_status_checks_take_requires_action_on_sqlite(make_app: Any) -> None:
    """0006 widened the CHECKs of the status columns (a table rebuild on SQLite)."""
    with tempfile.TemporaryDirectory() as tmp:
        sqlite_app = make_app(SQLALCHEMY_DATABASE_URI=f"sqlite:///{tmp}/checks.db")
        with sqlite_app.app_context():
            upgrade()
            with db.engine.begin() as conn:
                conn.execute(text(CUSTOMER_SQL))
                conn.execute(text(PAYMENT_SQL.format(status="requires_action", key="a" * 32)))
            with pytest.raises(IntegrityError), db.engine.begin() as conn:
                conn.execute(text(PAYMENT_SQL.format(status="bogus", key="b" * 32)))
            downgrade(revision="0005")  # the payment waiting for its customer becomes unknown
            with db.engine.connect() as conn:
                assert conn.execute(text("SELECT status FROM payments")).scalar() == "unknown"
            upgrade()
            db.engine.dispose()


CUSTOMER_SQL = (
    "INSERT INTO customers (id, email, password_hash, session_version, created_at) "
    "VALUES (1, 'a@example.com', 'x', 0, '2026-12-01')"
)
PAYMENT_SQL = (
    "INSERT INTO payments (idempotency_key, customer_id, purpose, wallet_id, provider, "
    "amount_minor, currency, status, send_count, reconcile_attempts, is_effect_applied, "
    "effect_reversals, created_at, updated_at) VALUES ('{key}', 1, 'wallet_topup', 1, "
    "'stripe', 100, 'EUR', '{status}', 0, 0, 0, 0, '2026-12-01', '2026-12-01')"
)
