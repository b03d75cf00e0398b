"""Plain factory functions with defaults; they flush but never commit."""

from __future__ import annotations

import itertools
import uuid

from werkzeug.security import generate_password_hash

from extensions import db
from models import Customer, Order, OrderLine, Payment, PaymentPurpose, Product, Wallet

# The card token a test payment carries, per provider: Stripe's test PaymentMethod that
# succeeds, the acquirer sandbox's approved card.
TEST_CARDS = {"stripe": "pm_card_visa", "acquirer": "card_ok", "toy": "card_toy"}

_seq = itertools.count(1)


def make_customer(email: str | None = None, password: str = "password123") -> Customer:
    customer = Customer(
        email=email or f"customer{next(_seq)}@example.com",
        password_hash=generate_password_hash(password, method="pbkdf2:sha256:1"),
    )
    db.session.add(customer)
    db.session.flush()
    return customer


def make_product(sku: str | None = None, price_minor: int = 1000, currency: str = "EUR") -> Product:
    product = Product(
        sku=sku or f"SKU-{next(_seq)}", name="Thing", price_minor=price_minor, currency=currency
    )
    db.session.add(product)
    db.session.flush()
    return product


def make_order(customer: Customer, quantity: int = 1, price_minor: int = 1000) -> Order:
    product = make_product(price_minor=price_minor)
    order = Order(
        customer_id=customer.id, total_minor=quantity * price_minor, currency=product.currency
    )
    db.session.add(order)
    db.session.flush()
    db.session.add(
        OrderLine(
            order_id=order.id,
            product_id=product.id,
            quantity=quantity,
            unit_price_minor=price_minor,
            line_total_minor=quantity * price_minor,
        )
    )
    db.session.flush()
    return order


def make_wallet(customer: Customer, currency: str = "EUR") -> Wallet:
    wallet = Wallet(customer_id=customer.id, currency=currency, balance_minor=0)
    db.session.add(wallet)
    db.session.flush()
    return wallet


def make_payment(order: Order, provider: str = "stripe", key: uuid.UUID | None = None) -> Payment:
    payment = Payment(
        idempotency_key=key or uuid.uuid4(),
        customer_id=order.customer_id,
        purpose=PaymentPurpose.ORDER,
        order_id=order.id,
        provider=provider,
        amount_minor=order.total_minor,
        currency=order.currency,
        payment_method=TEST_CARDS[provider],
    )
    db.session.add(payment)
    db.session.flush()
    return payment
