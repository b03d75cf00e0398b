"""What a shopper does on the pages, for tests: sign in, put an order together, open
its checkout (as static/card.js posts it)."""

from __future__ import annotations

import re
import uuid

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import Customer, Wallet
from services.accounts.customers import create_customer
from services.wallet import ledger
from settings import settings
from tests.helpers import csrf_token_from


def login(client: FlaskClient, app: Flask, email: str = "shopper@example.com") -> None:
    with app.app_context():
        create_customer(email, "password123", settings(app).money.currencies)
    token = csrf_token_from(client.get("/login").get_data(as_text=True))
    response = client.post(
        "/login", data={"email": email, "password": "password123", "csrf_token": token}
    )
    assert response.status_code == 302


def place_order(client: FlaskClient) -> int:
    page = client.get("/").get_data(as_text=True)
    client.post(
        "/cart/add", data={"sku": "MUG", "quantity": "2", "csrf_token": csrf_token_from(page)}
    )
    cart = client.get("/cart").get_data(as_text=True)
    assert "€28.00" in cart
    response = client.post("/orders", data={"csrf_token": csrf_token_from(cart)})
    assert response.status_code == 303
    match = re.search(r"/orders/(\d+)/checkout", response.headers["Location"])
    assert match
    return int(match.group(1))


def checkout_form(client: FlaskClient, order_id: int) -> dict[str, str]:
    page = client.get(f"/orders/{order_id}/checkout").get_data(as_text=True)
    key = re.search(r'name="idempotency_key" value="([^"]+)"', page)
    provider = re.search(r'name="provider" value="([^"]+)"', page)
    assert key and provider
    # What static/card.js posts once the provider's script made its token in the browser
    # (Stripe.js a PaymentMethod; braintree-web a nonce).
    card = {"stripe": "pm_card_visa", "braintree": "fake-valid-nonce"}[provider.group(1)]
    return {
        "csrf_token": csrf_token_from(page),
        "idempotency_key": key.group(1),
        "provider": provider.group(1),
        "payment_method": card,
    }


def fund(app: Flask, email: str, amount: int) -> None:
    with app.app_context():
        target = db.session.scalar(
            select(Wallet)
            .join(Customer, Customer.id == Wallet.customer_id)
            .where(Customer.email == email, Wallet.currency == "EUR")
        )
        assert target is not None
        ledger.credit(target, amount, f"fund:{uuid.uuid4()}")
