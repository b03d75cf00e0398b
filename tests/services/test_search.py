"""The dashboard's search finds a payment by each thing an operator may hold."""

from __future__ import annotations

import uuid
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from extensions import db
from models import Customer, Payment, Refund
from services.charging import charge_payment
from services.refund_jobs import send_refund
from services.refunds import refund_payment
from services.search import search
from tests.factories import make_customer, make_order
from tests.helpers import committed_payment, run_maintenance_jobs, signed_post, stripe_event


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


def test_one_hit_opens_the_payment_several_are_listed(
    app: Flask, admin_client: FlaskClient, sandbox: Any
) -> None:
    first = committed_payment(app)
    with app.app_context():
        payment = db.session.get(Payment, first)
        assert payment is not None
        key, customer_id = str(payment.idempotency_key), payment.customer_id
    one = admin_client.get("/admin/search/", query_string={"q": key})
    assert one.status_code == 302 and one.headers["Location"].endswith(f"/admin/payment/{first}")
    none = admin_client.get("/admin/search/", query_string={"q": "zzz"}).get_data(as_text=True)
    assert "No payment matches" in none
    second = committed_payment(app)
    with app.app_context():
        email = db.session.get(Customer, customer_id).email  # type: ignore[union-attr]
        db.session.get(Payment, second).customer_id = customer_id  # type: ignore[union-attr]
        db.session.commit()
    listed = admin_client.get("/admin/search/", query_string={"q": email}).get_data(as_text=True)
    assert f"/admin/payment/{first}" in listed and f"/admin/payment/{second}" in listed
    assert 'class="form-inline ml-auto dashboard-search"' in listed  # the box on every page
