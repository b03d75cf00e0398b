"""Sign-up, login and logout pages (blueprints/auth.py)."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import func, select

from extensions import db
from models import Customer
from tests.helpers import csrf_token_from


def test_signup_login_logout(client: FlaskClient) -> None:
    token = csrf_token_from(client.get("/signup").get_data(as_text=True))
    response = client.post(
        "/signup",
        data={"email": "Carol@Example.com", "password": "long-enough", "csrf_token": token},
    )
    # signed up, signed in: straight to the catalog
    assert response.status_code == 303 and response.headers["Location"] == "/"
    assert "carol@example.com" in client.get("/").get_data(as_text=True)
    token = csrf_token_from(client.get("/").get_data(as_text=True))
    client.post("/logout", data={"csrf_token": token})
    token = csrf_token_from(client.get("/login").get_data(as_text=True))
    response = client.post(
        "/login",
        data={"email": "carol@example.com", "password": "long-enough", "csrf_token": token},
    )
    assert response.status_code == 302
    assert "carol@example.com" in client.get("/").get_data(as_text=True)
    token = csrf_token_from(client.get("/").get_data(as_text=True))
    client.post("/logout", data={"csrf_token": token})
    assert "carol@example.com" not in client.get("/").get_data(as_text=True)


def test_signup_with_a_taken_email_changes_nothing_and_signs_no_one_in(
    client: FlaskClient, app: Flask
) -> None:
    """A second sign-up with someone's email (another password) neither signs in nor
    changes their account; its owner (their own password) is simply signed in."""
    first = app.test_client()
    token = csrf_token_from(first.get("/signup").get_data(as_text=True))
    data = {"email": "dup@example.com", "password": "long-enough", "csrf_token": token}
    assert first.post("/signup", data=data).headers["Location"] == "/"
    token = csrf_token_from(client.get("/signup").get_data(as_text=True))
    response = client.post(
        "/signup",
        data={"email": "dup@example.com", "password": "another-one", "csrf_token": token},
    )
    assert (response.status_code, response.headers["Location"]) == (303, "/login")
    assert "dup@example.com" not in client.get("/").get_data(as_text=True)
    owner = app.test_client()
    token = csrf_token_from(owner.get("/signup").get_data(as_text=True))
    again = owner.post("/signup", data={**data, "csrf_token": token})
    assert again.headers["Location"] == "/" and "dup@example.com" in owner.get("/").text
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Customer)) == 1
    # The second sign-up changed nothing: only the first password logs in.
    token = csrf_token_from(client.get("/login").get_data(as_text=True))
    wrong = client.post(
        "/login", data={"email": "dup@example.com", "password": "another-one", "csrf_token": token}
    )
    assert wrong.status_code == 400


def test_forms_without_csrf_token_are_refused(client: FlaskClient, app: Flask) -> None:
    response = client.post("/signup", data={"email": "x@example.com", "password": "long-enough"})
    assert response.status_code == 400
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Customer)) == 0


def test_login_redirect_ignores_offsite_next(client: FlaskClient, runner: FlaskCliRunner) -> None:
    runner.invoke(args=["seed"])
    token = csrf_token_from(client.get("/login").get_data(as_text=True))
    response = client.post(
        "/login?next=//evil.example/x",
        data={"email": "alice@example.com", "password": "demo-password", "csrf_token": token},
    )
    assert response.status_code == 302
    assert response.headers["Location"] == "/"


def test_a_password_of_spaces_is_no_password(app: Flask, client: FlaskClient) -> None:
    for password in (" " * 12, "\t" * 8 + "abc", "a b c d e f g"):  # 0, 3 and 7 besides spaces
        token = csrf_token_from(client.get("/signup").get_data(as_text=True))
        form = {"email": "dave@example.com", "password": password, "csrf_token": token}
        refused = client.post("/signup", data=form)
        assert refused.status_code == 400, repr(password)
        assert "at least 8 characters besides spaces" in refused.get_data(as_text=True)
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Customer)) == 0
