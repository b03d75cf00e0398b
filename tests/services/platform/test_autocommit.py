"""The lean paths' connections: each statement its own transaction, and a connection
the database dropped said plainly (the caller then takes its ORM path)."""

from __future__ import annotations

import pytest
from flask import Flask
from sqlalchemy import text

from extensions import db
from services.platform import autocommit
from tests.lock_support import drop_other_connections


def test_a_statement_is_committed_on_its_own(app_ctx: Flask) -> None:
    row = autocommit.first_row(text("SELECT 41 + 1 AS answer, txid_current() AS tx"), {})
    again = autocommit.first_row(text("SELECT txid_current() AS tx"), {})
    assert row is not None and again is not None
    assert row.answer == 42
    assert again.tx != row.tx  # no transaction is kept open between two statements
    assert autocommit.first_row(text("SELECT 1 WHERE false"), {}) is None


def test_a_dropped_connection_is_said_plainly(app_ctx: Flask) -> None:
    assert autocommit.first_row(text("SELECT 1 AS one"), {}) is not None  # a pooled connection
    # The database drops every connection but this one (a restart, as the pool sees it).
    assert drop_other_connections(db.engine)
    with pytest.raises(autocommit.ConnectionLost):
        autocommit.first_row(text("SELECT 1"), {})
    # The pool has let the dead connections go: the next statement works.
    assert autocommit.first_row(text("SELECT 1 AS one"), {}) is not None


def test_a_dropped_connection_is_tried_once_more_on_a_new_one(app_ctx: Flask) -> None:
    assert autocommit.first_row(text("SELECT 1 AS one"), {}) is not None  # a pooled connection
    assert drop_other_connections(db.engine)  # a restart, as the pool sees it
    row = autocommit.first_row_retried(text("SELECT 2 AS two"), {})
    assert row is not None and row.two == 2
