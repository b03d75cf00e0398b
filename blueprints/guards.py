"""What a request's JSON, form and query must be before any view reads them: JSON as
every boundary here accepts it (providers.events.strict_json: bounded nesting, finite
numbers, text without NUL or lone surrogates), and form and query text without NUL or
other control characters (PostgreSQL stores no NUL; nobody types one). Refused with a
clear 400, before anything is written."""

from __future__ import annotations

import io
import json
from typing import Any

from flask import Flask, abort, request
from flask.json.provider import DefaultJSONProvider

from providers.events import strict_json

ALLOWED_CONTROLS = "\t\n\r"  # a textarea's own


class StrictJSONProvider(DefaultJSONProvider):
    """request.get_json through strict_json: a refusal is a ValueError, which Flask
    answers 400 (or None with silent=True, which the views answer 400)."""

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        return strict_json(s)


def register(app: Flask) -> None:
    app.json = StrictJSONProvider(app)
    app.before_request(refuse_control_characters)
    app.wsgi_app = ChunkedBodyLimit(app.wsgi_app, app.config["MAX_CONTENT_LENGTH"])  # type: ignore[method-assign]


class ChunkedBodyLimit:
    """A body sent without Content-Length (chunked) is read, at most one byte past the
    limit, before the app sees it: over the limit it is a 413, as with Content-Length
    (werkzeug would hand the app the first MAX_CONTENT_LENGTH bytes, silently cut)."""

    def __init__(self, app: Any, limit_bytes: int) -> None:
        self.app, self.limit_bytes = app, limit_bytes

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        is_chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if is_chunked and not environ.get("CONTENT_LENGTH"):
            body = environ["wsgi.input"].read(self.limit_bytes + 1)
            if len(body) > self.limit_bytes:
                answer = json.dumps(
                    {
                        "error": {
                            "code": "request_entity_too_large",
                            "message": f"bodies are limited to {self.limit_bytes} bytes",
                        }
                    }
                ).encode()
                start_response(
                    "413 Request Entity Too Large",
                    [
                        ("Content-Type", "application/json"),
                        ("Content-Length", str(len(answer))),
                        ("Connection", "close"),
                    ],
                )
                return [answer]
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
            environ["wsgi.input_terminated"] = False
        return self.app(environ, start_response)


def refuse_control_characters() -> None:
    # Webhooks read their raw body themselves (signature first): never parse it as a form.
    sources = [request.args] + ([] if request.path.startswith("/webhooks") else [request.form])
    for source in sources:
        for key, value in source.items(multi=True):
            if _is_not_text(key) or _is_not_text(value):
                abort(400, description=f"the field {key[:40]!r} holds a character that is not text")


def _is_not_text(text: str) -> bool:
    return any(ord(char) < 0x20 and char not in ALLOWED_CONTROLS for char in text) or (
        "\x7f" in text
    )
