from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from devtools.servers import free_port


def test_healthz_is_alive(client: FlaskClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json == {"status": "ok"}


def test_readyz_when_database_and_redis_answer(client: FlaskClient) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json == {"status": "ready"}


def test_readyz_names_redis_when_it_is_down(app: Flask, make_app: Any) -> None:
    app = make_app(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    response = app.test_client().get("/readyz")
    assert response.status_code == 503
    assert response.get_json()["failing"].keys() == {"redis"}


def test_readyz_names_database_when_it_is_down(make_app: Any) -> None:
    bad_db = f"postgresql+psycopg://nobody@127.0.0.1:{free_port()}/none"
    app = make_app(SQLALCHEMY_DATABASE_URI=bad_db)
    response = app.test_client().get("/readyz")
    assert response.status_code == 503
    assert response.get_json()["failing"].keys() == {"database"}


def test_a_database_outage_is_a_503_not_a_500(make_app: Any) -> None:
    broken = make_app(SQLALCHEMY_DATABASE_URI=f"postgresql+psycopg://x@127.0.0.1:{free_port()}/x")
    client = broken.test_client()
    page = client.get("/")
    assert page.status_code == 503 and page.headers["Retry-After"] == "1"
    assert "Traceback" not in page.get_data(as_text=True)
    api = client.get("/api/payments/1", headers={"Authorization": "Bearer abc"})
    assert api.status_code == 503
    assert api.get_json()["error"]["code"] == "service_unavailable"


def test_a_connection_lost_under_the_driver_is_a_503(make_app: Any) -> None:
    import psycopg

    app = make_app()

    def lost() -> str:
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    app.add_url_rule("/api/lost", "lost", lost)  # what the wallet's hot path would raise
    response = app.test_client().get("/api/lost")
    assert response.status_code == 503
    assert response.get_json()["error"]["code"] == "service_unavailable"
