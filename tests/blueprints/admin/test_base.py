"""Every dashboard page is behind the admin login (AdminOnly), a customer's session
opens none, and no action is taken without its CSRF token."""

from __future__ import annotations

import pytest
from flask import Flask
from flask.testing import FlaskClient

from models import PaymentStatus
from services.accounts.customers import create_customer
from tests.helpers import csrf_token_from, payment, unknown_payment

ADMIN_URLS = [
    "/admin/",
    "/admin/unknown/",
    "/admin/queues/",
    "/admin/admin_payments/",
    "/admin/admin_payments/details/?id=1",
    "/admin/admin_orders/",
    "/admin/admin_processed_webhooks/",
    "/admin/admin_wallets/",
    "/admin/admin_ledger_entries/",
    "/admin/admin_customers/",
    "/admin/admin_disputes/",
    "/admin/users/",
]


@pytest.mark.parametrize("url", ADMIN_URLS)
def test_every_admin_url_needs_an_admin_login(client: FlaskClient, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/admin/login")


def test_a_customer_session_cannot_reach_the_admin(app: Flask, client: FlaskClient) -> None:
    with app.app_context():
        create_customer("shopper@example.com", "password123", app.config["CURRENCIES"])
    token = csrf_token_from(client.get("/login").get_data(as_text=True))
    client.post(
        "/login",
        data={"email": "shopper@example.com", "password": "password123", "csrf_token": token},
    )
    response = client.get("/admin/")
    assert response.status_code == 302 and "/admin/login" in response.headers["Location"]


def test_actions_without_csrf_are_refused(admin_client: FlaskClient, app: Flask) -> None:
    payment_id = unknown_payment(app)
    response = admin_client.post(
        f"/admin/unknown/{payment_id}/resolve",
        data={"confirm": "yes", "outcome": "succeeded", "reason": "seen at provider"},
    )
    assert response.status_code == 400
    response = admin_client.post(
        "/admin/breakers/stripe", data={"action": "open", "reason": "x", "confirm": "yes"}
    )
    assert response.status_code == 400
    assert payment(app, payment_id).status == PaymentStatus.UNKNOWN


@pytest.mark.parametrize("url", ADMIN_URLS)
def test_every_admin_url_works_for_an_admin(
    admin_client: FlaskClient, app: Flask, url: str
) -> None:
    unknown_payment(app)
    assert admin_client.get(url).status_code == 200
