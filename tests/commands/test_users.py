"""flask customers create, flask admin create and flask admin set-password."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import select

from extensions import db
from models import Customer
from tests.admin_support import ADMIN_EMAIL, admin_login, make_admin


def test_customers_create_prints_a_token_stored_hashed(runner: FlaskCliRunner, app: Flask) -> None:
    result = runner.invoke(args=["customers", "create", "api@example.com"])
    assert result.exit_code == 0, result.output
    token = result.output.split("api token: ")[1].strip()
    with app.app_context():
        customer = db.session.scalar(select(Customer).where(Customer.email == "api@example.com"))
        assert customer is not None and customer.api_token_hash not in (None, token)
    again = runner.invoke(args=["customers", "create", "api@example.com"])
    assert again.exit_code != 0 and "already exists" in again.output


def test_admin_create_command(runner: Any, app: Flask) -> None:
    result = runner.invoke(args=["admin", "create", "new-ops@example.com"], input="\n")
    assert result.exit_code == 0 and "password:" in result.output
    again = runner.invoke(
        args=["admin", "create", "new-ops@example.com", "--password", "another long one"]
    )
    assert again.exit_code != 0 and "already exists" in again.output


def test_admin_set_password_replaces_a_forgotten_one_and_signs_out_everywhere(
    runner: Any, app: Flask, client: FlaskClient
) -> None:
    make_admin(app)
    assert admin_login(client).status_code == 302
    assert client.get("/admin/").status_code == 200
    new_password = "a brand new passphrase"
    result = runner.invoke(args=["admin", "set-password", ADMIN_EMAIL, "--password", new_password])
    assert result.exit_code == 0 and "signed out everywhere" in result.output, result.output
    assert client.get("/admin/").status_code in (302, 401)  # the old session is over
    other = app.test_client()
    assert admin_login(other).status_code != 302  # the old password no longer works
    assert admin_login(other, new_password).status_code == 302
    missing = runner.invoke(args=["admin", "set-password", "nobody@example.com"], input="\n")
    assert missing.exit_code != 0 and "No admin has the email" in missing.output
    short = runner.invoke(args=["admin", "set-password", ADMIN_EMAIL, "--password", "short"])
    assert short.exit_code != 0 and "at least 12" in short.output
    spaces = runner.invoke(args=["admin", "set-password", ADMIN_EMAIL, "--password", " " * 16])
    assert spaces.exit_code != 0 and "besides spaces" in spaces.output


def test_admin_create_with_a_role(runner: Any, app: Flask) -> None:
    from models import AdminRole, AdminUser

    made = runner.invoke(
        args=["admin", "create", "viewer@example.com", "--role", "viewer"], input="\n"
    )
    assert made.exit_code == 0 and "(viewer)" in made.output, made.output
    default = runner.invoke(args=["admin", "create", "boss@example.com"], input="\n")
    assert default.exit_code == 0 and "(admin)" in default.output
    bad = runner.invoke(args=["admin", "create", "x@example.com", "--role", "root"], input="\n")
    assert bad.exit_code != 0 and "root" in bad.output
    with app.app_context():
        roles = dict(db.session.execute(select(AdminUser.email, AdminUser.role)).all())
    assert roles == {"viewer@example.com": AdminRole.VIEWER, "boss@example.com": AdminRole.ADMIN}
