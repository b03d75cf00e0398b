"""Admin sign-in: throttled per account and address, a logout ends every session."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient

from tests.accounts_support import ATTACKER, OWNER, replayed_session, sign_in
from tests.admin_support import ADMIN_EMAIL, ADMIN_PASSWORD, make_admin
from tests.helpers import csrf_token_from


def test_admin_guessing_does_not_lock_the_real_admin_out(app: Flask) -> None:
    make_admin(app)
    attacker = app.test_client()
    answers = [
        sign_in(attacker, ADMIN_EMAIL, f"guess-{n}", ATTACKER, "/admin/login").status_code
        for n in range(7)
    ]
    assert answers == [400] * 5 + [429] * 2
    owner = app.test_client()
    assert sign_in(owner, ADMIN_EMAIL, ADMIN_PASSWORD, OWNER, "/admin/login").status_code == 302
    # Successful logins are not counted as attempts.
    for _ in range(7):
        again = app.test_client()
        assert sign_in(again, ADMIN_EMAIL, ADMIN_PASSWORD, OWNER, "/admin/login").status_code == 302


def test_an_admin_cookie_replayed_after_logout_opens_nothing(
    app: Flask, client: FlaskClient
) -> None:
    make_admin(app)
    assert sign_in(client, ADMIN_EMAIL, ADMIN_PASSWORD, OWNER, "/admin/login").status_code == 302
    cookie = client.get_cookie("session")
    assert cookie is not None
    assert replayed_session(app, cookie.value).get("/admin/").status_code == 200
    token = csrf_token_from(client.get("/admin/").get_data(as_text=True))
    client.post("/admin/logout", data={"csrf_token": token})
    replayed = replayed_session(app, cookie.value).get("/admin/")
    assert replayed.status_code == 302 and "/admin/login" in replayed.headers["Location"]
