"""The session cookie, as Flask signs it, with its signing serializer built once per key
set instead of on every request (Flask builds one even for a request with no cookie: a
twentieth of an API payment's CPU)."""

from __future__ import annotations

from flask import Flask
from flask.sessions import SecureCookieSessionInterface
from itsdangerous import URLSafeTimedSerializer


class KeptSerializerSessions(SecureCookieSessionInterface):
    """Flask's own signed-cookie sessions; the serializer is kept while the secret key and
    its fallbacks (a rotation: SECRET_KEY_FALLBACKS) stay the same."""

    def __init__(self) -> None:
        self._kept: tuple[object, URLSafeTimedSerializer | None] | None = None

    def get_signing_serializer(self, app: Flask) -> URLSafeTimedSerializer | None:
        keys = (app.secret_key, tuple(app.config.get("SECRET_KEY_FALLBACKS") or ()))
        kept = self._kept
        if kept is None or kept[0] != keys:
            kept = self._kept = (keys, super().get_signing_serializer(app))
        return kept[1]


def register(app: Flask) -> None:
    app.session_interface = KeptSerializerSessions()
