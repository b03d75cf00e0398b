"""Demo data for development: a catalog, two customers with an opening balance, an
admin. Safe to run any number of times; in production only the catalog."""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence

from sqlalchemy import select

from extensions import db
from models import AdminUser, Customer, Product
from services.accounts.customers import create_customer
from services.backoffice.admins import create_admin
from services.wallet import ledger

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


def seed_catalog() -> None:
    """Add the demo products that are missing. Commits."""
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


def seed_demo_accounts(currencies: Sequence[str]) -> Iterator[str]:
    """Add the demo customers (with an opening balance, once) and the demo admin when
    missing; yields a line for each account created (the admin's password once)."""
    for email in DEMO_CUSTOMERS:
        customer = db.session.scalar(select(Customer).where(Customer.email == email))
        if customer is None:
            customer = create_customer(email, DEMO_CUSTOMER_PASSWORD, currencies)
            yield f"demo customer: {email} / {DEMO_CUSTOMER_PASSWORD}"
        # An opening balance through the ledger, once (the operation id makes repeats no-ops).
        ledger.credit(
            ledger.wallet_of(customer, "EUR"),
            DEMO_OPENING_BALANCE_MINOR,
            f"seed:{email}:EUR",
            memo="demo opening balance",
        )
    if db.session.scalar(select(AdminUser).where(AdminUser.email == DEMO_ADMIN_EMAIL)) is None:
        password = secrets.token_urlsafe(12)
        create_admin(DEMO_ADMIN_EMAIL, password)
        # Printed once: only the hash is stored.
        yield f"demo admin: {DEMO_ADMIN_EMAIL} / {password}  (shown once)"
