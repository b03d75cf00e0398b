"""A WSGI app for the edge tests: what gunicorn itself answers happens before any app
code, and a 413 is whatever the app answers when a body is over its limit."""

from __future__ import annotations

import json
from typing import Any


def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    if environ["PATH_INFO"] == "/api/big":  # the body is never read, as werkzeug's 413
        body = json.dumps({"error": {"code": "request_entity_too_large", "message": "big"}})
        status = "413 Request Entity Too Large"
    else:
        body, status = json.dumps({"ok": True}), "200 OK"
    answer = body.encode()
    start_response(
        status,
        [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(answer))),
            ("Connection", "close"),  # as Flask's 413 says (blueprints/errors.py)
        ],
    )
    return [answer]
