"""Error responses: JSON under /api and /webhooks, a page elsewhere. Never a stack trace."""

from __future__ import annotations

import logging
from contextlib import suppress

import psycopg
from flask import Flask, Response, jsonify, render_template, request
from flask.typing import ResponseReturnValue
from flask_wtf.csrf import CSRFError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import InternalError as SQLAlchemyInternalError
from werkzeug.exceptions import HTTPException, InternalServerError, ServiceUnavailable

from extensions import db

log = logging.getLogger(__name__)
JSON_PREFIXES = ("/api/", "/webhooks/")


def register(app: Flask) -> None:
    app.register_error_handler(HTTPException, http_error)
    app.register_error_handler(Exception, unexpected_error)
    # psycopg's own errors too: the wallet's hot path talks to the driver directly.
    outages = (
        OperationalError,
        InterfaceError,
        psycopg.OperationalError,
        psycopg.InterfaceError,
        RedisConnectionError,
        RedisTimeoutError,
    )
    for outage in outages:
        app.register_error_handler(outage, dependency_down)
    # A write that reached a primary being demoted (a standby now): the switch, not a bug.
    app.register_error_handler(psycopg.errors.ReadOnlySqlTransaction, dependency_down)
    app.register_error_handler(SQLAlchemyInternalError, internal_database_error)


def http_error(exc: HTTPException) -> tuple[Response | str, int, dict[str, str]]:
    with suppress(Exception):  # the database may be the thing that is down
        db.session.rollback()
    code = exc.code or 500
    # The exception's own headers that a client needs: Allow on a 405, Retry-After.
    headers = {k: v for k, v in exc.get_headers() if k in ("Allow", "Retry-After")}
    if code == 413:
        headers["Connection"] = "close"  # the rest of the body is not read: say so
    if request.path.startswith(JSON_PREFIXES):
        error_code = (
            "csrf_failed"
            if isinstance(exc, CSRFError)
            else (exc.name or "error").lower().replace(" ", "_")
        )
        return jsonify(error={"code": error_code, "message": exc.description}), code, headers
    page = render_template("error.html", code=code, name=exc.name, description=exc.description)
    return page, code, headers


def unexpected_error(exc: Exception) -> ResponseReturnValue:
    log.exception("unhandled error on %s %s", request.method, request.path)
    return http_error(InternalServerError())


def internal_database_error(exc: SQLAlchemyInternalError) -> ResponseReturnValue:
    """The database's "internal" class: a read-only transaction is the failover's switch
    (a 503 to retry); anything else is unexpected."""
    if isinstance(exc.orig, psycopg.errors.ReadOnlySqlTransaction):
        return dependency_down(exc)
    return unexpected_error(exc)


def dependency_down(exc: Exception) -> ResponseReturnValue:
    """The database or Redis is unreachable: a 503 to retry, not a 500."""
    log.warning("dependency down on %s %s: %s", request.method, request.path, exc)
    body, code, headers = http_error(
        ServiceUnavailable("Temporarily unavailable; please try again.")
    )
    return body, code, {**headers, "Retry-After": "1"}
