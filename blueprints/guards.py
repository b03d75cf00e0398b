"""What a request must be before any view reads it: headers and address within the
app's own limits, a body within MAX_CONTENT_LENGTH (chunked too), JSON as
every boundary here accepts it (providers.events.strict_json: bounded nesting, finite
numbers, text without NUL or lone surrogates), and form and query text without NUL or
other control characters (PostgreSQL stores no NUL; nobody types one). Refused with a
clear 4xx (JSON where the app answers before Flask), before anything is written."""

from __future__ import annotations

import io
import json
from typing import Any

from flask import Flask, abort, request
from flask.json.provider import DefaultJSONProvider

from providers.events import NOT_TEXT, strict_json

# The app's own limits, below gunicorn's (raised in devtools/supervisor_conf.py), so a
# client gets this JSON answer rather than the server's HTML page.
MAX_TARGET_BYTES = 4096  # path and query
MAX_HEADER_BYTES = 8190  # one header's value
MAX_HEADERS = 80
# The bodies werkzeug reads as a form (werkzeug.formparser.FormDataParser.parse).
FORM_TYPES = frozenset({"multipart/form-data", "application/x-www-form-urlencoded"})


class StrictJSONProvider(DefaultJSONProvider):
    """request.get_json through strict_json, integral numbers read as integers (JSON
    Schema's reading of 5.0): a refusal is a ValueError, which Flask answers 400 (or None
    with silent=True, which the views answer 400)."""

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        return strict_json(s, is_integral_float_int=True)


def register(app: Flask) -> None:
    app.json = StrictJSONProvider(app)
    app.before_request(refuse_control_characters)
    app.wsgi_app = RequestLimits(app.wsgi_app, app.config["MAX_CONTENT_LENGTH"])  # type: ignore[method-assign]  # the WSGI app is wrapped on purpose


class RequestLimits:
    """Before the app sees a request: a path, query or header over the app's own limits
    is a JSON 414/431, and a body sent without Content-Length (chunked) is read, at most
    one byte past the limit: over it, a 413, as with Content-Length (werkzeug would hand
    the app the first MAX_CONTENT_LENGTH bytes, silently cut)."""

    def __init__(self, app: Any, limit_bytes: int | None) -> None:
        self.app, self.limit_bytes = app, limit_bytes

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        refused = _oversized(environ)
        if refused is not None:
            return _json_answer(start_response, *refused)
        is_chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if is_chunked and not environ.get("CONTENT_LENGTH") and self.limit_bytes is not None:
            body = environ["wsgi.input"].read(self.limit_bytes + 1)
            if len(body) > self.limit_bytes:
                return _json_answer(
                    start_response,
                    "413 Request Entity Too Large",
                    "request_entity_too_large",
                    f"bodies are limited to {self.limit_bytes} bytes",
                )
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
            environ["wsgi.input_terminated"] = False
        return self.app(environ, start_response)


def refuse_control_characters() -> None:
    # Only a form's body is a form (werkzeug parses no other type; an API request's JSON
    # would only be made an empty one here). Webhooks read their raw body themselves
    # (signature first): never parse it as a form.
    is_form = request.mimetype in FORM_TYPES and not request.path.startswith("/webhooks")
    sources = [request.args, request.form] if is_form else [request.args]
    for source in sources:
        for key, value in source.items(multi=True):
            if _is_not_text(key) or _is_not_text(value):
                abort(400, description=f"the field {key[:40]!r} holds a character that is not text")


def _is_not_text(text: str) -> bool:
    # JSON's rule (a textarea's tab, newline and carriage return pass), and no DEL.
    return NOT_TEXT.search(text) is not None or "\x7f" in text


def _oversized(environ: dict[str, Any]) -> tuple[str, str, str] | None:
    target = len(environ.get("PATH_INFO", "")) + len(environ.get("QUERY_STRING", ""))
    if target > MAX_TARGET_BYTES:
        return "414 URI Too Long", "uri_too_long", f"path and query: {MAX_TARGET_BYTES} bytes"
    headers = [value for key, value in environ.items() if key.startswith("HTTP_")]
    if len(headers) > MAX_HEADERS or any(len(str(v)) > MAX_HEADER_BYTES for v in headers):
        return (
            "431 Request Header Fields Too Large",
            "request_header_fields_too_large",
            f"at most {MAX_HEADERS} headers of {MAX_HEADER_BYTES} bytes each",
        )
    return None


def _json_answer(start_response: Any, status: str, code: str, message: str) -> list[bytes]:
    answer = json.dumps({"error": {"code": code, "message": message}}).encode()
    start_response(
        status,
        [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(answer))),
            ("Connection", "close"),
        ],
    )
    return [answer]
