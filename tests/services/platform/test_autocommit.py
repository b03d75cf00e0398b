"""The lean paths' connections: each statement its own transaction, and a connection
the database dropped said plainly (the caller then takes its ORM path)."""

from __future__ import annotations

import pytest
from flask import Flask
from sqlalchemy import text

from extensions import db
from services.platform import autocommit


def test_a_statement_is_committed_on_its_own(app_ctx: Flask) -> None:
    row = autocommit.first_row(text("SELECT 41 + 1 AS answer, txid_current() AS tx"), {})
    again = autocommit.first_row(text("SELECT txid_current() AS tx"), {})
    assert row is not None and again is not None
    assert row.answer == 42
    assert again.tx != row.tx  # no transaction is kept open between two statements
    assert autocommit.first_row(text("SELECT 1 WHERE false"), {}) is None


def test_a_dropped_connection_is_said_plainly(app_ctx: Flask) -> None:
    backend = autocommit.first_row(text("SELECT pg_backend_pid() AS pid"), {})
    assert backend is not None
    db.session.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": backend.pid})
    db.session.commit()
    with pytest.raises(autocommit.ConnectionLost):
        autocommit.first_row(text("SELECT 1"), {})
    # The pool has let the dead connection go: the next statement works.
    assert autocommit.first_row(text("SELECT 1 AS one"), {}) is not None
