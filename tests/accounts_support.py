"""Sign-in test steps: the owner and an attacker by address, a login, a session replayed."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from tests.helpers import csrf_token_from

ATTACKER = {"REMOTE_ADDR": "10.0.0.66"}


OWNER = {"REMOTE_ADDR": "10.0.0.7"}


def sign_in(
    client: FlaskClient, email: str, password: str, where: dict[str, str], path: str = "/login"
) -> Any:
    token = csrf_token_from(client.get(path, environ_base=where).get_data(as_text=True))
    return client.post(
        path,
        data={"email": email, "password": password, "csrf_token": token},
        environ_base=where,
    )


def replayed_session(app: Flask, cookie: str) -> FlaskClient:
    replayer = app.test_client()
    replayer.set_cookie("session", cookie)
    return replayer
