"""The dashboard's search finds a payment by each thing an operator may hold."""

from __future__ import annotations

import uuid
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from extensions import db
from models import Customer, Payment, Refund
from services.backoffice.search import search
from services.refunds.issue import refund_payment
from tests.factories import make_customer, make_order, make_payment
from tests.helpers import (
    charge_payment,
    committed_payment,
    run_maintenance_jobs,
    send_refund,
    signed_post,
    stripe_event,
)


def _found(app: Flask, text: str) -> list[tuple[int, str]]:
    with app.app_context():
        return [(hit.payment.id, hit.why) for hit in search(text)]


def test_every_key_finds_the_payment(app: Flask, client: FlaskClient, sandbox: Any) -> None:
    with app.app_context():
        make_order(make_customer())  # an order without a payment: its id is not the payment's
        db.session.commit()
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
        asked, _ = refund_payment(payment_id, 100, "search test", "ops", uuid.uuid4())
        send_refund(asked.id)
        payment = db.session.get(Payment, payment_id)
        refund = db.session.get(Refund, asked.id)
        assert payment is not None and refund is not None
        customer = db.session.get(Customer, payment.customer_id)
        assert customer is not None
        keys = {
            "payment id": str(payment_id),
            "idempotency key": str(payment.idempotency_key),
            "order id": str(payment.order_id),
            "customer email": customer.email.upper(),
            "provider id": payment.provider_payment_id,
            "refund key": str(refund.idempotency_key),
            "provider refund id": refund.provider_refund_id,
        }
    event = stripe_event(payment_id, intent_id=str(keys["provider id"]), event_id="evt_search")
    signed_post(client, event)
    run_maintenance_jobs(app)
    keys["webhook event"] = "evt_search"
    for why, text in keys.items():
        hits = _found(app, str(text))
        assert (payment_id, why) in hits or (hits and hits[0][0] == payment_id), (why, hits)
    assert _found(app, "nothing-like-this") == [] and _found(app, "   ") == []
    assert _found(app, "99999999999999999999") == []  # not a row id: no error either


def test_the_cards_last_four_and_the_amount_find_payments(app: Flask, sandbox: Any) -> None:
    paid = committed_payment(app)
    with app.app_context():
        charge_payment(paid)
        other = make_payment(make_order(make_customer(), price_minor=1234))
        db.session.commit()
        other_id = other.id
    assert (paid, "card's last 4") in _found(app, "4242")
    assert _found(app, "10.00") == [(paid, "amount")]
    assert _found(app, "EUR 10,00") == [(paid, "amount")]
    assert _found(app, "12.34 eur") == [(other_id, "amount")]
    assert _found(app, "USD 10.00") == [] and _found(app, "10.001") == []
    assert (paid, "amount") in _found(app, "10")  # a whole number is an amount too
