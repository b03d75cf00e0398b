"""The customer's order page: lines, dates, every payment with its status, refunds with
their dates and the net amount; nobody else's order."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from extensions import db
from models import Customer, Order
from services.payments.orders import order_page
from services.platform.errors import NotFoundError
from services.refunds.issue import refund_payment
from tests.helpers import run_jobs, seed_catalog
from tests.shop_support import checkout_form, login, place_order


def test_a_paid_and_partly_refunded_order_shows_its_whole_story(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    with app.app_context():
        seed_catalog()
    login(client, app, "story@example.com")
    order_id = place_order(client)
    paid = client.post(f"/orders/{order_id}/pay", data=checkout_form(client, order_id))
    payment_id = int(paid.headers["Location"].rsplit("/", 1)[1])
    run_jobs(app)
    with app.app_context():
        refund_payment(payment_id, 500, "one mug was chipped", "ops", uuid.uuid4())
    run_jobs(app)
    with app.app_context():
        customer = db.session.query(Customer).filter_by(email="story@example.com").one()
        page = order_page(customer, order_id)
        assert [p.id for p in page.payments] == [payment_id]
        assert (page.paid_minor, page.refunded_minor, page.net_minor) == (
            page.order.total_minor,
            500,
            page.order.total_minor - 500,
        )
        net = page.net_minor
    listing = client.get("/orders").get_data(as_text=True)
    assert f'href="/orders/{order_id}"' in listing  # reached from "Your orders"
    shown = client.get(f"/orders/{order_id}", headers={"Accept-Language": "it"})
    html = shown.get_data(as_text=True)
    assert shown.status_code == 200 and "Rimborsato in parte" in html
    assert f'href="/payments/{payment_id}"' in html and "Pagato" in html
    assert f'data-net-minor="{net}"' in html and "5,00\xa0€" in html  # the refund, in euros
    assert "placed on" not in html and "effettuato il" in html


def test_nobody_sees_anyone_elses_order(app: Flask, client: FlaskClient) -> None:
    with app.app_context():
        seed_catalog()
    login(client, app, "owner@example.com")
    order_id = place_order(client)
    other = app.test_client()
    login(other, app, "stranger@example.com")
    assert other.get(f"/orders/{order_id}").status_code == 404
    assert other.get("/orders/999999").status_code == 404
    with app.app_context():
        stranger = db.session.query(Customer).filter_by(email="stranger@example.com").one()
        with pytest.raises(NotFoundError):
            order_page(stranger, order_id)
        assert db.session.get(Order, order_id) is not None
