"""Error responses: JSON under /api and /webhooks, a page elsewhere. Never a stack trace."""

from __future__ import annotations

import logging

from flask import Flask, jsonify, render_template, request
from flask.typing import ResponseReturnValue
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException, InternalServerError

from extensions import db

log = logging.getLogger(__name__)
JSON_PREFIXES = ("/api/", "/webhooks/")


def register(app: Flask) -> None:
    app.register_error_handler(HTTPException, http_error)
    app.register_error_handler(Exception, unexpected_error)


def http_error(exc: HTTPException) -> ResponseReturnValue:
    db.session.rollback()
    code = exc.code or 500
    if request.path.startswith(JSON_PREFIXES):
        error_code = (
            "csrf_failed"
            if isinstance(exc, CSRFError)
            else (exc.name or "error").lower().replace(" ", "_")
        )
        return jsonify(error={"code": error_code, "message": exc.description}), code
    return render_template(
        "error.html", code=code, name=exc.name, description=exc.description
    ), code


def unexpected_error(exc: Exception) -> ResponseReturnValue:
    log.exception("unhandled error on %s %s", request.method, request.path)
    return http_error(InternalServerError())
