"""The lean paths' connections: a pool of autocommit connections (each statement is its
own transaction) without the liveness ping the app's pool does before lending a
connection that lay idle (resilience/db_ping.py: a round trip, and a quarter of a lean
path's CPU). A connection that died is noticed by the statement itself: `first_row`
says so, the app's pools let their connections go too (the same restart dropped them),
and the caller takes its ORM path, which finds whatever the statement did commit.

A statement written as `plain(sql)` (SQL text whose parameters and columns need no types:
the hot paths' own) runs on the pool's psycopg connection as it is: SQLAlchemy's
execution context and result set cost a third of such a statement's CPU. Its rows are
named tuples; its errors are SQLAlchemy's, as for any other statement."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import psycopg
from flask import current_app
from psycopg import pq
from psycopg.rows import namedtuple_row
from sqlalchemy import Engine, Executable, create_engine, text
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from sqlalchemy.exc import DBAPIError

from extensions import db

log = logging.getLogger(__name__)

_ENGINES: dict[str, Engine] = {}
_ENGINES_LOCK = threading.Lock()


@dataclass(frozen=True)
class Plain:
    """A statement for psycopg as it is: SQL with %(name)s parameters (see `plain`)."""

    sql: str


def plain(sql: str) -> Plain:
    """SQL text with :name parameters, written for psycopg once, as SQLAlchemy writes
    text() (its escapes and casts alike)."""
    return Plain(str(text(sql).compile(dialect=PGDialect_psycopg())))


# A row: SQLAlchemy's Row, or a plain statement's named tuple (columns as attributes).
Record = Any


class ConnectionLost(Exception):
    """The database dropped the connection (a restart): whether the statement committed
    is not known; the caller's ORM path reads what is there."""


def engine() -> Engine:
    """One autocommit engine per database, whichever thread asks first."""
    url = current_app.config["SQLALCHEMY_DATABASE_URI"]
    if url in _ENGINES:
        return _ENGINES[url]
    with _ENGINES_LOCK:
        if url not in _ENGINES:
            options = {**current_app.config.get("SQLALCHEMY_ENGINE_OPTIONS", {})}
            options.update(pool_pre_ping=False, isolation_level="AUTOCOMMIT")
            _ENGINES[url] = create_engine(url, **options)
        return _ENGINES[url]


def first_row(statement: Executable | Plain, params: Mapping[str, object]) -> Record | None:
    """Run one statement as its own transaction; its first row (None when it returned
    none). Raises ConnectionLost when the database dropped the connection."""
    found = all_rows(statement, params)
    return found[0] if found else None


def first_row_retried(statement: Executable | Plain, params: Mapping[str, object]) -> Record | None:
    """first_row, once more on a new connection when the database dropped the first (the
    pool lets its dead connections go after one fails: a restart). A first try that did
    commit makes the second find its own row (the statements are written for that).
    Raises ConnectionLost when the second is dropped too."""
    try:
        return first_row(statement, params)
    except ConnectionLost:
        return first_row(statement, params)


def all_rows(statement: Executable | Plain, params: Mapping[str, object]) -> list[Record]:
    """Run one statement as its own transaction; the rows it returned (ConnectionLost)."""
    if isinstance(statement, Plain):
        return _plain_rows(statement, params)
    try:
        with engine().connect() as conn:
            result = conn.execute(statement, params)
            return list(result.all()) if result.returns_rows else []
    except DBAPIError as exc:
        if not exc.connection_invalidated:
            raise
        raise _lost(exc.orig, engine()) from exc


def _plain_rows(statement: Plain, params: Mapping[str, object]) -> list[Record]:
    pool = engine()
    try:
        pooled = pool.raw_connection()
    except psycopg.Error as exc:  # no connection to be had: as SQLAlchemy's connect() says it
        raise DBAPIError.instance(None, None, exc, psycopg.Error) from exc
    try:
        driver = cast(psycopg.Connection[Any], pooled.driver_connection)
        with driver.cursor(row_factory=namedtuple_row) as cursor:
            cursor.execute(statement.sql, params)
            # The result's status, not `description` (which builds a Column per field).
            result = cursor.pgresult
            returned = result is not None and result.status == pq.ExecStatus.TUPLES_OK
            return cursor.fetchall() if returned else []
    except psycopg.Error as exc:
        if not pool.dialect.is_disconnect(cast(Any, exc), pooled.dbapi_connection, None):
            raise DBAPIError.instance(statement.sql, params, exc, psycopg.Error) from exc
        pooled.invalidate(exc)  # closed, not pooled again
        raise _lost(exc, pool) from exc
    finally:
        pooled.close()


def _lost(cause: BaseException | None, pool: Engine) -> ConnectionLost:
    """A restart dropped every connection: the pool lets all it holds go (a new pool for
    the next checkout), and so do the app's pools, whose connections the same restart
    dropped: the caller's ORM path, next, must not meet one (the app's pool asks only a
    connection idle for a second whether it is alive, resilience/db_ping.py). Not
    SQLAlchemy's own invalidation, which keeps a connection whose start time reads later
    than the drop (one made while the clock was ahead)."""
    log.warning("lean statement: connection lost (%s); its caller decides", cause)
    release_pools(pool)
    return ConnectionLost(str(cause))


def release_pools(pool: Engine | None = None) -> None:
    """The lean pool (`pool`, or this app's) and the app's own pools let every connection
    they hold go; one checked out now is closed when it is given back."""
    (pool or engine()).dispose()
    for app_pool in db.engines.values():
        app_pool.dispose()
