"""flask seed: demo data, idempotent; catalog only in production."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import func, select

from extensions import db
from models import AdminUser, Customer, Product, Wallet


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
    assert "€14.00" in page


def test_seed_creates_no_demo_accounts_in_production(app: Any, make_app: Any) -> None:
    from sqlalchemy import func, select

    from extensions import db
    from models import AdminUser, Customer, Product

    production = make_app(IS_PRODUCTION=True)
    result = production.test_cli_runner().invoke(args=["seed"])
    assert result.exit_code == 0 and "no demo accounts" in result.output
    assert "demo-password" not in result.output
    with production.app_context():
        counts = [
            db.session.scalar(select(func.count()).select_from(model)) or 0
            for model in (Customer, AdminUser, Product)
        ]
    assert counts[0] == counts[1] == 0 and counts[2] > 0
