"""Error answers: JSON under /api and /webhooks, a page elsewhere, 503 with Retry-After
when a dependency is down, never a stack trace."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from devtools.servers import free_port


def test_json_errors_under_the_api_and_pages_elsewhere(client: FlaskClient) -> None:
    api = client.get("/api/nowhere")
    assert api.status_code == 404 and api.get_json()["error"]["code"] == "not_found"
    page = client.get("/nowhere")
    assert page.status_code == 404 and page.mimetype == "text/html"
    assert "Traceback" not in page.get_data(as_text=True)


def test_a_database_outage_answers_503_to_retry(app: Flask, make_app: Any) -> None:
    down = make_app(SQLALCHEMY_DATABASE_URI=f"postgresql+psycopg://127.0.0.1:{free_port()}/x")
    answer = down.test_client().get("/")
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "1"


def test_a_redis_outage_answers_503_where_redis_is_needed(app: Flask, make_app: Any) -> None:
    down = make_app(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    answer = down.test_client().get("/readyz")
    assert answer.status_code == 503 and answer.get_json()["failing"]["redis"]
