"""Refund requests end to end through the pages: the customer asks on their order page;
the request waits in the console; a refunder approves it (a refund at the sandbox, the
refund email) or declines it (the customer's email says why); a viewer only reads."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from models import Refund, RefundRequest
from tests.admin_support import admin_as, admin_csrf
from tests.helpers import csrf_token_from, rows, run_jobs, run_notification_jobs, sandbox_refunds
from tests.shop_support import checkout_form, place_order


def _paid_and_asked(app: Flask, shopper: FlaskClient, reason: str = "It arrived broken.") -> int:
    order_id = place_order(shopper)
    shopper.post(f"/orders/{order_id}/pay", data=checkout_form(shopper, order_id))
    run_jobs(app)
    page = shopper.get(f"/orders/{order_id}").get_data(as_text=True)
    assert "Ask for a refund" in page
    asked = shopper.post(
        f"/orders/{order_id}/refund-request",
        data={"reason": reason, "csrf_token": csrf_token_from(page)},
    )
    assert asked.status_code == 303
    after = shopper.get(f"/orders/{order_id}").get_data(as_text=True)
    assert "the shop has not answered yet" in after and "Ask for a refund</button>" not in after
    return order_id


def _request_id(page: str) -> int:
    found = re.search(r'data-request="(\d+)"', page)
    assert found, page
    return int(found.group(1))


def test_approved_it_refunds_at_the_provider_and_the_customer_is_emailed(
    app: Flask, shopper: FlaskClient, sandbox: Any, mail_sink: Any
) -> None:
    order_id = _paid_and_asked(app, shopper)
    with app.test_client() as console:
        refunder = admin_as(app, console, "refunder")
        queue = refunder.get("/admin/refund_requests/").get_data(as_text=True)
        assert "It arrived broken." in queue and "shopper@example.com" in queue
        assert "Visa 4242" in queue  # the payment, named
        request_id = _request_id(queue)
        approved = refunder.post(
            f"/admin/refund_requests/{request_id}/approve",
            data={
                "confirm": "yes",
                "amount": "",
                "currency": "EUR",
                "csrf_token": admin_csrf(refunder),
            },
        )
        assert approved.status_code == 303
    run_jobs(app)
    run_notification_jobs(app)
    assert rows(app, Refund) == 1
    [refunded] = sandbox_refunds(sandbox)
    assert refunded["amount"] == 2800
    [email] = [m for m in mail_sink.messages() if "refund" in m["Subject"].lower()]
    text = email.get_body(("plain",)).get_content()
    assert "€28.00" in text and f"Order #{order_id}" in text and "4242" in text
    assert f"/orders/{order_id}" in text
    page = shopper.get(f"/orders/{order_id}").get_data(as_text=True)
    assert "agreed to your refund" in page


def test_declined_the_customer_reads_why(
    app: Flask, shopper: FlaskClient, sandbox: Any, mail_sink: Any
) -> None:
    order_id = _paid_and_asked(app, shopper)
    with app.test_client() as console:
        refunder = admin_as(app, console, "refunder")
        request_id = _request_id(refunder.get("/admin/refund_requests/").get_data(as_text=True))
        refunder.post(
            f"/admin/refund_requests/{request_id}/decline",
            data={"message": "Sold as seen, no returns.", "csrf_token": admin_csrf(refunder)},
        )
    run_notification_jobs(app)
    assert rows(app, Refund) == 0 and sandbox_refunds(sandbox) == []
    [email] = [m for m in mail_sink.messages() if "refund request" in m["Subject"].lower()]
    assert "Sold as seen, no returns." in email.get_body(("plain",)).get_content()
    assert "Sold as seen, no returns." in shopper.get(f"/orders/{order_id}").get_data(as_text=True)


def test_a_viewer_reads_the_queue_but_cannot_decide(
    app: Flask, shopper: FlaskClient, sandbox: Any
) -> None:
    _paid_and_asked(app, shopper)
    with app.test_client() as console:
        viewer = admin_as(app, console, "viewer")
        queue = viewer.get("/admin/refund_requests/").get_data(as_text=True)
        assert "It arrived broken." in queue and "approve-request" not in queue
        refused = viewer.post(
            f"/admin/refund_requests/{_request_id(queue)}/approve",
            data={"confirm": "yes", "currency": "EUR", "csrf_token": admin_csrf(viewer)},
        )
        assert refused.status_code == 403
    assert rows(app, Refund) == 0 and rows(app, RefundRequest) == 1


def test_a_customer_refused_reads_why(app: Flask, shopper: FlaskClient, sandbox: Any) -> None:
    order_id = _paid_and_asked(app, shopper)
    page = shopper.get(f"/orders/{order_id}").get_data(as_text=True)
    again = shopper.post(
        f"/orders/{order_id}/refund-request",
        data={"reason": "Asking twice", "csrf_token": csrf_token_from(page)},
        follow_redirects=True,
    )
    assert "You asked for a refund of this order" in again.get_data(as_text=True)
    assert rows(app, RefundRequest) == 1
    elsewhere = shopper.post(
        "/orders/999999/refund-request",
        data={"reason": "not mine at all", "csrf_token": csrf_token_from(page)},
    )
    assert elsewhere.status_code == 404


def test_a_typed_amount_is_read_in_the_orders_currency_whatever_the_form_says(
    app: Flask, shopper: FlaskClient, sandbox: Any
) -> None:
    _paid_and_asked(app, shopper)
    with app.test_client() as console:
        refunder = admin_as(app, console, "refunder")
        request_id = _request_id(refunder.get("/admin/refund_requests/").get_data(as_text=True))
        refunder.post(
            f"/admin/refund_requests/{request_id}/approve",
            data={
                "confirm": "yes",
                "amount": "5.00",
                "currency": "JPY",  # a tampered field: not read
                "csrf_token": admin_csrf(refunder),
            },
        )
    run_jobs(app)
    [refunded] = sandbox_refunds(sandbox)
    assert refunded["amount"] == 500  # EUR 5.00, the order's currency
