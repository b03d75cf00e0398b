"""`flask seed`: demo data for development, safe to run any number of times."""

from __future__ import annotations

import secrets

import click
from flask import current_app
from flask.cli import with_appcontext
from sqlalchemy import select
from werkzeug.security import generate_password_hash

from extensions import db
from models import AdminUser, Customer, Product
from services import wallet
from services.customers import create_customer

DEMO_PRODUCTS = [
    ("TEE-001", "Payments T-shirt", "Soft cotton, says 'idempotent' on the back.", 2500, "EUR"),
    ("MUG-001", "Circuit breaker mug", "Opens after three coffees.", 1400, "EUR"),
    ("BOOK-001", "Release It! (used)", "The book about stability patterns.", 3900, "EUR"),
    ("STICK-01", "Sticker pack", "Unknown is a state, not an error.", 300, "EUR"),
]
DEMO_CUSTOMERS = ["alice@example.com", "bob@example.com"]
DEMO_CUSTOMER_PASSWORD = "demo-password"
DEMO_OPENING_BALANCE_MINOR = 5000  # 50.00 EUR in each demo wallet
DEMO_ADMIN_EMAIL = "admin@example.com"


@click.command("seed")
@with_appcontext
def seed_command() -> None:
    """Add the demo catalog, and outside production two demo customers and an admin."""
    for sku, name, description, price_minor, currency in DEMO_PRODUCTS:
        if db.session.scalar(select(Product).where(Product.sku == sku)) is None:
            db.session.add(
                Product(
                    sku=sku,
                    name=name,
                    description=description,
                    price_minor=price_minor,
                    currency=currency,
                )
            )
    db.session.commit()
    if current_app.config["IS_PRODUCTION"]:
        # The demo customers' password is published in the README: never in production.
        click.echo("seed: catalog only (APP_ENV=production: no demo accounts)")
        return
    for email in DEMO_CUSTOMERS:
        customer = db.session.scalar(select(Customer).where(Customer.email == email))
        if customer is None:
            customer = create_customer(
                email, DEMO_CUSTOMER_PASSWORD, current_app.config["CURRENCIES"]
            )
            click.echo(f"demo customer: {email} / {DEMO_CUSTOMER_PASSWORD}")
        # An opening balance through the ledger, once (the operation id makes repeats no-ops).
        wallet.credit(
            wallet.wallet_of(customer, "EUR"),
            DEMO_OPENING_BALANCE_MINOR,
            f"seed:{email}:EUR",
            reference="demo opening balance",
        )
    if db.session.scalar(select(AdminUser).where(AdminUser.email == DEMO_ADMIN_EMAIL)) is None:
        password = secrets.token_urlsafe(12)
        db.session.add(
            AdminUser(email=DEMO_ADMIN_EMAIL, password_hash=generate_password_hash(password))
        )
        db.session.commit()
        # Printed once: only the hash is stored.
        click.echo(f"demo admin: {DEMO_ADMIN_EMAIL} / {password}  (shown once)")
    click.echo("seed: done")
