"""The migrations are the schema: after `upgrade`, autogenerate finds nothing to add."""

from __future__ import annotations

import tempfile
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from flask import Flask
from flask_migrate import upgrade
from sqlalchemy import Column, Integer, MetaData, inspect

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
