"""The search box's answers in the dashboard: one payment opens its page, several are
listed, none says so; the box is on every page."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from extensions import db
from models import Customer, Payment
from tests.helpers import committed_payment, got


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
        email = got(Customer, customer_id).email
        got(Payment, second).customer_id = customer_id
        db.session.commit()
    listed = admin_client.get("/admin/search/", query_string={"q": email}).get_data(as_text=True)
    assert f"/admin/payment/{first}" in listed and f"/admin/payment/{second}" in listed
    assert 'class="form-inline ml-auto dashboard-search"' in listed  # the box on every page
