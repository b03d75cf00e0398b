"""The pages: cart -> order -> checkout -> pay -> status, with one payment per intent."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from extensions import db
from models import Order, Payment, PaymentStatus, Refund, RefundStatus, TransitionSource
from services.refunds.state import move_refund
from tests.factories import make_refund
from tests.helpers import csrf_token_from, payment, run_jobs
from tests.shop_support import checkout_form, login, place_order


def payments(app: Flask) -> int:
    with app.app_context():
        return int(db.session.scalar(select(func.count()).select_from(Payment)) or 0)


def test_the_same_form_submitted_twice_makes_one_payment_and_one_charge(
    shopper: FlaskClient, app: Flask, sandbox: Any
) -> None:
    order_id = place_order(shopper)
    form = checkout_form(shopper, order_id)
    first = shopper.post(f"/orders/{order_id}/pay", data=form)
    second = shopper.post(f"/orders/{order_id}/pay", data=form)  # double click / resubmit
    assert first.status_code == second.status_code == 303
    assert first.headers["Location"] == second.headers["Location"]
    assert payments(app) == 1
    status = shopper.get(first.headers["Location"]).get_data(as_text=True)
    assert "Payment in progress" in status and "data-refresh-s=" in status
    run_jobs(app)
    done = shopper.get(first.headers["Location"]).get_data(as_text=True)
    assert "your payment succeeded" in done and "data-refresh-s=" not in done
    payment_id = int(first.headers["Location"].rsplit("/", 1)[1])
    assert sandbox.succeeded_charges(str(payment_id)) == 1


def test_a_second_render_of_the_checkout_page_pays_the_same_payment(
    shopper: FlaskClient, app: Flask
) -> None:
    order_id = place_order(shopper)
    tab_one, tab_two = checkout_form(shopper, order_id), checkout_form(shopper, order_id)
    assert tab_one["idempotency_key"] != tab_two["idempotency_key"]
    first = shopper.post(f"/orders/{order_id}/pay", data=tab_one)
    second = shopper.post(f"/orders/{order_id}/pay", data=tab_two)
    assert first.headers["Location"] == second.headers["Location"]
    assert payments(app) == 1


def test_tampered_amount_is_ignored(shopper: FlaskClient, app: Flask) -> None:
    order_id = place_order(shopper)
    form = {**checkout_form(shopper, order_id), "amount_minor": "1", "amount": "0.01"}
    response = shopper.post(f"/orders/{order_id}/pay", data=form)
    payment_id = int(response.headers["Location"].rsplit("/", 1)[1])
    assert payment(app, payment_id).amount_minor == 2800


@pytest.mark.parametrize("key", ["", "not-a-uuid", "1234"])
def test_malformed_key_writes_nothing(shopper: FlaskClient, app: Flask, key: str) -> None:
    order_id = place_order(shopper)
    form = {**checkout_form(shopper, order_id), "idempotency_key": key}
    response = shopper.post(f"/orders/{order_id}/pay", data=form)
    assert response.status_code == 303 and "/checkout" in response.headers["Location"]
    assert "This form is out of date" in shopper.get(response.headers["Location"]).get_data(
        as_text=True
    )
    assert payments(app) == 0


def test_pay_without_csrf_token_is_refused(shopper: FlaskClient, app: Flask) -> None:
    order_id = place_order(shopper)
    form = checkout_form(shopper, order_id)
    del form["csrf_token"]
    assert shopper.post(f"/orders/{order_id}/pay", data=form).status_code == 400
    assert payments(app) == 0


def test_someone_elses_order_and_payment_are_404(shopper: FlaskClient, app: Flask) -> None:
    order_id = place_order(shopper)
    form = checkout_form(shopper, order_id)
    payment_url = shopper.post(f"/orders/{order_id}/pay", data=form).headers["Location"]
    other = app.test_client()
    login(other, app, "other@example.com")
    assert other.get(f"/orders/{order_id}/checkout").status_code == 404
    token = csrf_token_from(other.get("/").get_data(as_text=True))
    response = other.post(
        f"/orders/{order_id}/pay",
        data={"csrf_token": token, "idempotency_key": form["idempotency_key"]},
    )
    assert response.status_code == 404
    assert other.get(payment_url).status_code == 404
    assert payments(app) == 1


@pytest.mark.parametrize(
    ("sku", "quantity"), [("NOPE", "1"), ("MUG", "-1"), ("MUG", "x"), ("MUG", "1000")]
)
def test_bad_cart_input_is_refused(
    shopper: FlaskClient, app: Flask, sku: str, quantity: str
) -> None:
    token = csrf_token_from(shopper.get("/").get_data(as_text=True))
    response = shopper.post(
        "/cart/add", data={"sku": sku, "quantity": quantity, "csrf_token": token}
    )
    assert response.status_code == 302
    assert "1 to 100 pieces" in shopper.get("/").get_data(as_text=True)
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Order)) == 0


def test_unknown_payment_is_shown_honestly(shopper: FlaskClient, app: Flask) -> None:
    order_id = place_order(shopper)
    location = shopper.post(
        f"/orders/{order_id}/pay", data=checkout_form(shopper, order_id)
    ).headers["Location"]
    with app.app_context():
        found = db.session.get(Payment, int(location.rsplit("/", 1)[1]))
        assert found is not None
        found.status = PaymentStatus.UNKNOWN
        db.session.commit()
    page = shopper.get(location).get_data(as_text=True)
    assert (
        "we are confirming your payment with the bank; you will not be charged twice"
        in page.lower()
    )


def test_pages_need_login(client: FlaskClient) -> None:
    response = client.get("/orders")
    assert response.status_code == 302 and "/login" in response.headers["Location"]


def test_the_order_page_says_when_a_refund_did_not_go_through(
    app: Flask, shopper: FlaskClient, sandbox: Any
) -> None:
    order_id = place_order(shopper)
    shopper.post(f"/orders/{order_id}/pay", data=checkout_form(shopper, order_id))
    run_jobs(app)
    with app.app_context():
        paid = db.session.scalars(select(Payment).where(Payment.order_id == order_id)).one()
        refund = make_refund(paid, RefundStatus.UNKNOWN, amount_minor=500)
        assert move_refund(refund, RefundStatus.SUCCEEDED, source=TransitionSource.REFUND)
        db.session.commit()
        refund_id = refund.id
    page = shopper.get(f"/orders/{order_id}").get_data(as_text=True)
    assert "data-refund-failed" not in page
    with app.app_context():
        refund = db.session.get_one(Refund, refund_id)
        assert move_refund(refund, RefundStatus.FAILED, source=TransitionSource.WEBHOOK)
        db.session.commit()
    page = shopper.get(f"/orders/{order_id}").get_data(as_text=True)
    assert "data-refund-failed" in page and "has not reached you" in page
