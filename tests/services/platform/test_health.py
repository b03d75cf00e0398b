"""Readiness: the parts that do not answer, by name."""

from __future__ import annotations

from typing import Any

from flask import Flask

from devtools.servers import free_port
from services.platform.health import failing_dependencies


def test_everything_answers(app_ctx: Flask) -> None:
    assert failing_dependencies() == {}


def test_a_missing_redis_is_named(app: Flask, make_app: Any) -> None:
    with make_app(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0").app_context():
        assert set(failing_dependencies()) == {"redis"}
