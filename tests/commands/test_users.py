"""flask customers create and flask admin create."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import select

from extensions import db
from models import Customer


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
