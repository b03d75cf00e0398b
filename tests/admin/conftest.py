from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.security import generate_password_hash

from extensions import db
from models import AdminUser
from tests.helpers import csrf_token_from

ADMIN_EMAIL = "ops@example.com"
ADMIN_PASSWORD = "correct horse battery"


def make_admin(app: Flask) -> None:
    with app.app_context():
        db.session.add(
            AdminUser(email=ADMIN_EMAIL, password_hash=generate_password_hash(ADMIN_PASSWORD))
        )
        db.session.commit()


def admin_login(client: FlaskClient, password: str = ADMIN_PASSWORD) -> Any:
    token = csrf_token_from(client.get("/admin/login").get_data(as_text=True))
    return client.post(
        "/admin/login", data={"email": ADMIN_EMAIL, "password": password, "csrf_token": token}
    )


@pytest.fixture
def admin_client(app: Flask, client: FlaskClient) -> FlaskClient:
    make_admin(app)
    response = admin_login(client)
    assert response.status_code == 302
    return client
