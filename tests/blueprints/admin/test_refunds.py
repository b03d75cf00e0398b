"""The dashboard's refund page: amount (read in the admin's language), a mandatory reason,
a review of what will be refunded to confirm; a double submit of the review is one refund;
the customer then sees the refund on the page and in the API."""

from __future__ import annotations

import re
import uuid
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from models import Refund
from tests.admin_support import ADMIN_EMAIL
from tests.helpers import api_order, api_pay, csrf_token_from, rows, run_jobs, sandbox_refunds


def _form(client: FlaskClient, payment_id: int, **fields: str) -> dict[str, str]:
    page = client.get(f"/admin/refunds/payment/{payment_id}").get_data(as_text=True)
    key = re.search(r'name="idempotency_key" value="([^"]+)"', page)
    assert key, page
    return {
        "csrf_token": csrf_token_from(page),
        "idempotency_key": key.group(1),
        "reason": "the mug arrived broken",
        **fields,
    }


def _reviewed(client: FlaskClient, payment_id: int, **fields: str) -> dict[str, str]:
    """The review's own form, after the typed one was read."""
    review = client.post(
        f"/admin/refunds/payment/{payment_id}", data=_form(client, payment_id, **fields)
    )
    assert review.status_code == 200
    page = review.get_data(as_text=True)
    assert "data-review" in page, page
    hidden = dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)"', page))
    return hidden


def _paid(app: Flask, client: FlaskClient, api: dict[str, str]) -> int:
    order = api_order(client, api)  # 2 mugs: 28.00 EUR
    payment_id = int(api_pay(client, api, order["id"]).get_json()["id"])
    run_jobs(app)
    return payment_id


def test_an_admin_refunds_part_of_a_payment_once(
    app: Flask, client: FlaskClient, api: dict[str, str], sandbox: Any
) -> None:
    payment_id = _paid(app, client, api)
    from tests.admin_support import admin_login, make_admin

    make_admin(app)
    admin_login(client)
    details = client.get(f"/admin/admin_payments/details/?id={payment_id}").get_data(as_text=True)
    assert f"/admin/refunds/payment/{payment_id}" in details
    form = _reviewed(client, payment_id, amount="10.50")
    assert form["amount_minor"] == "1050" and rows(app, Refund) == 0  # nothing before it
    first = client.post(f"/admin/refunds/payment/{payment_id}", data=form)
    second = client.post(f"/admin/refunds/payment/{payment_id}", data=form)  # double submit
    assert first.status_code == second.status_code == 303
    assert rows(app, Refund) == 1
    run_jobs(app)
    page = client.get(f"/admin/refunds/payment/{payment_id}").get_data(as_text=True)
    assert 'data-status="succeeded"' in page and ADMIN_EMAIL in page and "€17.50" in page
    assert [r["amount"] for r in sandbox_refunds(sandbox)] == [1050]
    seen = client.get(f"/api/payments/{payment_id}", headers=api).get_json()
    assert seen["refunded_minor"] == 1050
    assert seen["refunds"][0]["status"] == "succeeded" and "reason" not in seen["refunds"][0]
    order = client.get(f"/api/orders/{seen['order_id']}", headers=api).get_json()
    assert order["status"] == "partially_refunded" and order["refunded_minor"] == 1050


def test_no_refund_without_confirmation_or_reason(
    app: Flask, client: FlaskClient, api: dict[str, str], sandbox: Any
) -> None:
    payment_id = _paid(app, client, api)
    from tests.admin_support import admin_login, make_admin

    make_admin(app)
    admin_login(client)
    for fields in ({"reason": " "}, {"amount": "-1"}, {"amount": "5,50"}):
        response = client.post(
            f"/admin/refunds/payment/{payment_id}", data=_form(client, payment_id, **fields)
        )
        assert response.status_code == 200  # the page again, with the reason
        assert "data-review" not in response.get_data(as_text=True)
    for reviewed in ({"confirm": ""}, {"amount_minor": "99x"}, {"amount_minor": "9900"}):
        form = {**_reviewed(client, payment_id), **reviewed}
        response = client.post(f"/admin/refunds/payment/{payment_id}", data=form)
        assert response.status_code == 200  # refused: more than is left, or no confirmation
    assert rows(app, Refund) == 0


def test_an_italian_admin_types_the_amount_the_italian_way(
    app: Flask, client: FlaskClient, api: dict[str, str], sandbox: Any
) -> None:
    payment_id = _paid(app, client, api)
    from tests.admin_support import admin_login, make_admin

    make_admin(app)
    admin_login(client)
    italian = {"Accept-Language": "it"}
    page = client.get(f"/admin/refunds/payment/{payment_id}", headers=italian)
    form = _form(client, payment_id, amount="5,50")
    review = client.post(f"/admin/refunds/payment/{payment_id}", data=form, headers=italian)
    shown = review.get_data(as_text=True)
    assert 'name="amount_minor" value="550"' in shown and "5,50\xa0€" in shown  # not 550.00
    assert page.status_code == 200 and rows(app, Refund) == 0


def test_the_customer_sees_the_refund_on_the_payment_page(
    app: Flask, admin_client: FlaskClient, sandbox: Any
) -> None:
    from services.refunds.issue import refund_payment
    from tests.helpers import charged, committed_payment
    from tests.shop_support import login

    payment_id = charged(app, committed_payment(app))
    with app.app_context():
        refund_payment(payment_id, 400, "goodwill", "ops", uuid.uuid4())
    run_jobs(app)
    shopper = app.test_client()
    login(shopper, app, "refunded@example.com")
    with app.app_context():
        from extensions import db
        from models import Customer, Payment

        payment = db.session.get(Payment, payment_id)
        customer = db.session.scalar(
            db.select(Customer).where(Customer.email == "refunded@example.com")
        )
        assert payment is not None and customer is not None
        payment.customer_id = customer.id  # the shopper's own payment
        db.session.commit()
    page = shopper.get(f"/payments/{payment_id}").get_data(as_text=True)
    assert "Refunds to your card" in page and 'data-refund-status="succeeded"' in page
    assert "goodwill" not in page  # the admin's reason stays internal
    assert "€4.00" in page
    assert admin_client.get("/admin/admin_refunds/").status_code == 200
