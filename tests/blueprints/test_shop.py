from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import func, select

from extensions import db
from models import AdminUser, Customer, Product, Wallet
from tests.helpers import csrf_token_from


def test_seed_is_idempotent_and_shows_the_catalog(
    runner: FlaskCliRunner, client: FlaskClient, app: Flask
) -> None:
    first = runner.invoke(args=["seed"])
    assert first.exit_code == 0, first.output
    assert "demo admin: admin@example.com /" in first.output
    second = runner.invoke(args=["seed"])
    assert second.exit_code == 0, second.output
    assert "demo admin" not in second.output  # the password is printed once only
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Product)) == 4
        assert db.session.scalar(select(func.count()).select_from(Customer)) == 2
        assert db.session.scalar(select(func.count()).select_from(AdminUser)) == 1
        assert db.session.scalar(select(func.count()).select_from(Wallet)) == 2 * len(
            app.config["CURRENCIES"]
        )
    page = client.get("/").get_data(as_text=True)
    assert "Circuit breaker mug" in page
    assert "14.00 EUR" in page


def test_signup_login_logout(client: FlaskClient) -> None:
    token = csrf_token_from(client.get("/signup").get_data(as_text=True))
    response = client.post(
        "/signup",
        data={"email": "Carol@Example.com", "password": "long-enough", "csrf_token": token},
    )
    assert response.status_code == 303 and response.headers["Location"] == "/login"
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


def test_signup_with_a_taken_email_looks_like_a_new_account(
    client: FlaskClient, app: Flask
) -> None:
    """Sign-up must not tell a stranger whether an email has an account here."""
    answers: list[object] = []
    for password in ("long-enough", "another-one"):
        token = csrf_token_from(client.get("/signup").get_data(as_text=True))
        response = client.post(
            "/signup",
            data={"email": "dup@example.com", "password": password, "csrf_token": token},
        )
        answers.append((response.status_code, response.headers["Location"]))
        answers.append(client.get("/login").get_data(as_text=True).count("Your account is ready"))
    assert answers[0:2] == answers[2:4] == [(303, "/login"), 1]
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


def test_customers_create_prints_a_token_stored_hashed(runner: FlaskCliRunner, app: Flask) -> None:
    result = runner.invoke(args=["customers", "create", "api@example.com"])
    assert result.exit_code == 0, result.output
    token = result.output.split("api token: ")[1].strip()
    with app.app_context():
        customer = db.session.scalar(select(Customer).where(Customer.email == "api@example.com"))
        assert customer is not None and customer.api_token_hash not in (None, token)
    again = runner.invoke(args=["customers", "create", "api@example.com"])
    assert again.exit_code != 0 and "already exists" in again.output
