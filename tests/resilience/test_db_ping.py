"""The app's pool asks a connection whether it is alive only when it lay idle: a dead
idle connection is replaced before use; one given back a moment ago is lent unasked."""

from __future__ import annotations

import time
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from extensions import db
from resilience import db_ping


def _backend_of_the_pooled_connection(shop: Flask) -> int:
    """The server process of the one connection the shop's pool holds (given back)."""
    with shop.app_context():
        pid = int(db.session.scalar(text("SELECT pg_backend_pid()")) or 0)
        db.session.remove()
    return pid


def _kill(app: Flask, pid: int) -> None:
    with app.app_context():
        assert db.session.scalar(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        db.session.remove()
    time.sleep(0.1)  # the server closes it


def _one(shop: Flask) -> int:
    with shop.app_context():
        try:
            return int(db.session.scalar(text("SELECT 1")) or 0)
        finally:
            db.session.remove()


@pytest.fixture
def shop(make_app: Any) -> Flask:
    return make_app(SQLALCHEMY_ENGINE_OPTIONS={"pool_size": 1, "max_overflow": 0})


def test_a_dead_connection_that_lay_idle_is_replaced_before_use(
    app: Flask, shop: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db_ping, "IDLE_PING_S", 0.2)
    pid = _backend_of_the_pooled_connection(shop)
    _kill(app, pid)
    time.sleep(0.2)  # idle long enough to be asked
    assert _one(shop) == 1  # the ping found it dead: a new connection answered
    assert _backend_of_the_pooled_connection(shop) != pid


def test_a_connection_given_back_a_moment_ago_is_lent_unasked(
    app: Flask, shop: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No round trip before a busy process's statements; a connection that died within
    that moment fails its statement once, and the pool lets it and its elders go."""
    monkeypatch.setattr(db_ping, "IDLE_PING_S", 60)
    pid = _backend_of_the_pooled_connection(shop)
    _kill(app, pid)
    with pytest.raises(OperationalError):
        _one(shop)
    assert _one(shop) == 1
    assert _backend_of_the_pooled_connection(shop) != pid
