"""The session cookie: signed as Flask signs it, its serializer kept while the keys stay."""

from __future__ import annotations

from typing import Any

from flask import Flask, session

from blueprints.sessions import KeptSerializerSessions


def test_the_serializer_is_kept_until_the_keys_change(app: Flask) -> None:
    sessions = app.session_interface
    assert isinstance(sessions, KeptSerializerSessions)
    first = sessions.get_signing_serializer(app)
    assert first is not None and sessions.get_signing_serializer(app) is first
    signed = first.dumps({"customer": 7})
    old_key = app.secret_key
    app.secret_key = "a-new-key-after-a-rotation-0123456789"
    app.config["SECRET_KEY_FALLBACKS"] = [old_key]
    try:
        rotated = sessions.get_signing_serializer(app)
        assert rotated is not None and rotated is not first
        assert rotated.loads(signed) == {"customer": 7}  # the retired key still reads
        assert rotated.dumps({"customer": 7}) != signed  # signed with the new key now
    finally:
        app.secret_key, app.config["SECRET_KEY_FALLBACKS"] = old_key, []


def test_a_session_set_by_one_request_is_read_by_the_next(make_app: Any) -> None:
    app = make_app()

    @app.get("/_test/session/<value>")
    def keep(value: str) -> Any:
        previous = session.get("value", "")
        session["value"] = value
        return previous

    client = app.test_client()
    assert client.get("/_test/session/first").get_data(as_text=True) == ""
    assert client.get("/_test/session/second").get_data(as_text=True) == "first"
