"""The dashboard's login: a wrong password is refused and the attempts are limited."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient

from tests.admin_support import admin_login, make_admin


def test_wrong_password_and_rate_limit(app: Flask, client: FlaskClient) -> None:
    make_admin(app)
    for _ in range(5):
        assert admin_login(client, "wrong password!").status_code == 400
    assert admin_login(client).status_code == 429  # locked, even with the right password
    assert client.get("/admin/").status_code == 302
