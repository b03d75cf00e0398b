"""The lean paths' connections: each statement its own transaction, and a connection
the database dropped said plainly (the caller then takes its ORM path). Every behaviour
holds for SQLAlchemy's statements and for plain ones (psycopg as it is) alike."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from flask import Flask
from sqlalchemy import text
from sqlalchemy.exc import DataError, IntegrityError, OperationalError, ProgrammingError

from devtools.servers import free_port
from extensions import db
from resilience import db_ping
from services.platform import autocommit

KINDS: list[Callable[[str], Any]] = [text, autocommit.plain]


@pytest.fixture(params=KINDS, ids=["sqlalchemy", "plain"])
def sql(request: pytest.FixtureRequest) -> Callable[[str], Any]:
    return request.param


def test_a_statement_is_committed_on_its_own(app_ctx: Flask, sql: Callable[[str], Any]) -> None:
    row = autocommit.first_row(sql("SELECT 41 + :one AS answer, txid_current() AS tx"), {"one": 1})
    again = autocommit.first_row(sql("SELECT txid_current() AS tx"), {})
    assert row is not None and again is not None
    assert row.answer == 42
    assert again.tx != row.tx  # no transaction is kept open between two statements
    assert autocommit.first_row(sql("SELECT 1 WHERE false"), {}) is None


def test_plain_sql_is_written_as_sqlalchemy_writes_text(app_ctx: Flask) -> None:
    statement = autocommit.plain(
        "SELECT :word || '%' AS word, CAST(:ids AS bigint[]) AS ids, 7 % 4 AS rest"
    )
    assert statement.sql == (
        "SELECT %(word)s || '%%' AS word, CAST(%(ids)s AS bigint[]) AS ids, 7 %% 4 AS rest"
    )
    row = autocommit.first_row(statement, {"word": "ten", "ids": [1, 2]})
    assert row is not None and (row.word, row.ids, row.rest) == ("ten%", [1, 2], 3)
    written = autocommit.all_rows(
        autocommit.plain("CREATE TEMP TABLE IF NOT EXISTS t_plain (id int)"), {}
    )
    assert written == []  # a statement that returns no rows


def test_an_error_is_sqlalchemys_whichever_the_kind(
    app_ctx: Flask, sql: Callable[[str], Any]
) -> None:
    with pytest.raises(IntegrityError):  # as callers and error handlers expect it
        autocommit.first_row(sql("INSERT INTO customers (email) VALUES (:email)"), {"email": None})
    with pytest.raises(DataError):
        autocommit.first_row(sql("SELECT 1 / :zero AS x"), {"zero": 0})
    with pytest.raises(ProgrammingError):
        autocommit.first_row(sql("SELECT * FROM no_such_table"), {})
    # The connection is still good: the next statement on the pool works.
    assert autocommit.first_row(sql("SELECT 1 AS one"), {}) is not None


@pytest.fixture
def own_pool(app: Flask, make_app: Any) -> Iterator[Flask]:
    """An app whose lean pool is its own (the pools are per database URL): no thread
    left from an earlier test can notice the dropped connections first and let them go."""
    url = app.config["SQLALCHEMY_DATABASE_URI"]
    joined = "&" if "?" in url else "?"
    own = make_app(SQLALCHEMY_DATABASE_URI=f"{url}{joined}application_name=own_{uuid.uuid4().hex}")
    with own.app_context():
        yield own
        autocommit.engine().dispose()


def test_a_dropped_connection_is_said_plainly(
    own_pool: Flask, sql: Callable[[str], Any], drop_connections: Callable[[], int]
) -> None:
    # Two pooled connections, both dropped below.
    with autocommit.engine().connect() as first, autocommit.engine().connect() as second:
        first.execute(text("SELECT 1")), second.execute(text("SELECT 1"))
    # The database drops every connection but this one (a restart, as the pool sees it).
    assert drop_connections() >= 2
    with pytest.raises(autocommit.ConnectionLost):
        autocommit.first_row(sql("SELECT 1"), {})
    # The pool has let all its dead connections go: the next statement works.
    assert autocommit.first_row(sql("SELECT 1 AS one"), {}) is not None


def test_a_dropped_connection_lets_the_apps_pool_go_too(
    own_pool: Flask,
    sql: Callable[[str], Any],
    drop_connections: Callable[[], int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The caller's ORM path comes next: the app's connection, given back a moment ago
    and dropped by the same restart, is not lent to it (the pool would not ask it)."""
    monkeypatch.setattr(db_ping, "IDLE_PING_S", 60)
    assert autocommit.first_row(sql("SELECT 1 AS one"), {}) is not None
    pid = text("SELECT pg_backend_pid()")
    with db.engine.connect() as first, db.engine.connect() as second:
        backends = {first.scalar(pid), second.scalar(pid)}  # back in the pool a moment ago
    assert drop_connections()  # from one of them: the other is dropped
    with pytest.raises(autocommit.ConnectionLost):
        autocommit.first_row(sql("SELECT 1"), {})
    assert db.session.scalar(pid) not in backends


def test_a_dropped_connection_is_tried_once_more_on_a_new_one(
    own_pool: Flask, sql: Callable[[str], Any], drop_connections: Callable[[], int]
) -> None:
    assert autocommit.first_row(sql("SELECT 1 AS one"), {}) is not None  # a pooled connection
    assert drop_connections()  # a restart, as the pool sees it
    row = autocommit.first_row_retried(sql("SELECT 2 AS two"), {})
    assert row is not None and row.two == 2


def test_connections_made_while_the_clock_was_ahead_are_let_go_too(
    own_pool: Flask, sql: Callable[[str], Any], drop_connections: Callable[[], int]
) -> None:
    """The reported CI failure: the pool judged its connections by their start time, so
    two made while the clock read later (a test's time travel; a clock stepped back in
    production) outlived the first one's drop, and the retry took the second dead one."""
    ahead = datetime.now(UTC) + timedelta(days=40)
    pool = autocommit.engine()
    with time_machine.travel(ahead, tick=False), pool.connect() as first, pool.connect() as two:
        first.execute(text("SELECT 1")), two.execute(text("SELECT 1"))
    assert drop_connections() >= 2
    row = autocommit.first_row_retried(sql("SELECT 3 AS three"), {})
    assert row is not None and row.three == 3


def test_no_database_to_reach_is_sqlalchemys_error_too(
    make_app: Any, sql: Callable[[str], Any]
) -> None:
    down = make_app(SQLALCHEMY_DATABASE_URI=f"postgresql+psycopg://x@127.0.0.1:{free_port()}/x")
    with down.app_context(), pytest.raises(OperationalError):  # the 503 handlers know it
        autocommit.first_row(sql("SELECT 1"), {})
