"""What a request's JSON, form and query must be before any view reads them: JSON as
every boundary here accepts it (providers.events.strict_json: bounded nesting, finite
numbers, text without NUL or lone surrogates), and form and query text without NUL or
other control characters (PostgreSQL stores no NUL; nobody types one). Refused with a
clear 400, before anything is written."""

from __future__ import annotations

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
