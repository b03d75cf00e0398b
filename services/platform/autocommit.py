"""The lean paths' connections: a pool of autocommit connections (each statement is its
own transaction) without the liveness ping the app's pool does before every checkout
(a round trip, and a quarter of a lean path's CPU). A connection that died is noticed
by the statement itself: `first_row` says so, and the caller takes its ORM path, which
pings and finds whatever the statement did commit."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from flask import current_app
from sqlalchemy import Engine, Executable, Row, create_engine
from sqlalchemy.exc import DBAPIError

log = logging.getLogger(__name__)

_ENGINES: dict[str, Engine] = {}
_ENGINES_LOCK = threading.Lock()


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


def first_row(statement: Executable, params: Mapping[str, object]) -> Row[Any] | None:
    """Run one statement as its own transaction; its first row (None when it returned
    none). Raises ConnectionLost when the database dropped the connection."""
    found = all_rows(statement, params)
    return found[0] if found else None


def first_row_retried(statement: Executable, params: Mapping[str, object]) -> Row[Any] | None:
    """first_row, once more on a new connection when the database dropped the first (the
    pool lets its dead connections go after one fails: a restart). A first try that did
    commit makes the second find its own row (the statements are written for that).
    Raises ConnectionLost when the second is dropped too."""
    try:
        return first_row(statement, params)
    except ConnectionLost:
        return first_row(statement, params)


def all_rows(statement: Executable, params: Mapping[str, object]) -> list[Row[Any]]:
    """Run one statement as its own transaction; the rows it returned (ConnectionLost)."""
    try:
        with engine().connect() as conn:
            result = conn.execute(statement, params)
            return list(result.all()) if result.returns_rows else []
    except DBAPIError as exc:
        if not exc.connection_invalidated:
            raise
        log.warning("lean statement: connection lost (%s); its caller decides", exc.orig)
        raise ConnectionLost(str(exc.orig)) from exc
