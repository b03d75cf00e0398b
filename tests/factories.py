"""Plain factory functions with defaults; they flush but never commit."""

from __future__ import annotations

import itertools
import uuid

from werkzeug.security import generate_password_hash

from extensions import db
from models import (
    Customer,
    Dispute,
    DisputeStatus,
    Order,
    OrderLine,
    Payment,
    PaymentPurpose,
    Product,
    Refund,
    RefundStatus,
    Wallet,
)

# The card token a test payment carries, per provider: Stripe's test PaymentMethod that
# succeeds, Braintree's published test nonce that does.
TEST_CARDS = {
    "stripe": "pm_card_visa",
    "braintree": "fake-valid-nonce",
    "toy": "card_toy",
}

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


def make_topup(customer: Customer, amount_minor: int = 500, provider: str = "stripe") -> Payment:
    """A pending EUR top-up of a new EUR wallet of the customer's."""
    payment = Payment(
        idempotency_key=uuid.uuid4(),
        customer_id=customer.id,
        purpose=PaymentPurpose.WALLET_TOPUP,
        wallet_id=make_wallet(customer).id,
        provider=provider,
        amount_minor=amount_minor,
        currency="EUR",
        payment_method=TEST_CARDS[provider],
    )
    db.session.add(payment)
    db.session.flush()
    return payment


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


def make_refund(
    payment: Payment, status: RefundStatus = RefundStatus.PENDING, amount_minor: int = 100
) -> Refund:
    refund = Refund(
        idempotency_key=uuid.uuid4(),
        payment_id=payment.id,
        order_id=payment.order_id,
        provider=payment.provider,
        amount_minor=amount_minor,
        currency=payment.currency,
        reason="a test refund",
        actor="ops",
        status=status,
    )
    db.session.add(refund)
    db.session.flush()
    return refund


def make_dispute(
    payment: Payment,
    status: DisputeStatus = DisputeStatus.NEEDS_RESPONSE,
    *,
    is_withdrawn: bool = False,
    **fields: object,
) -> Dispute:
    """A dispute of the payment's whole amount; `is_withdrawn`: its funds are out."""
    dispute = Dispute(
        provider=payment.provider,
        provider_dispute_id=f"dp_{next(_seq)}_{uuid.uuid4().hex[:8]}",
        payment_id=payment.id,
        amount_minor=payment.amount_minor,
        currency=payment.currency,
        status=status,
        reason="fraudulent",
        is_effect_applied=is_withdrawn,
        withdrawn_minor=payment.amount_minor if is_withdrawn else 0,
        withdrawals=1 if is_withdrawn else 0,
    )
    for name, value in fields.items():
        setattr(dispute, name, value)
    db.session.add(dispute)
    db.session.flush()
    return dispute
