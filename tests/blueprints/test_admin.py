"""The admin dashboard: login, access control, CSRF, actions, overview, metrics."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import PaymentStatus, PaymentTransition
from models.types import utcnow
from services.accounts.customers import create_customer
from services.payments.charging import charge_payment
from services.platform.provider_clients import breaker_for
from tests.factories import make_customer, make_order, make_payment
from tests.helpers import admin_login, csrf_token_from, make_admin, payment

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
]


def unknown_payment(app: Flask) -> int:
    with app.app_context():
        created = make_payment(make_order(make_customer()))
        created.status = PaymentStatus.UNKNOWN
        created.first_sent_at = utcnow()
        db.session.commit()
        return created.id


@pytest.mark.parametrize("url", ADMIN_URLS)
def test_every_admin_url_needs_an_admin_login(client: FlaskClient, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/admin/login")


@pytest.mark.parametrize("url", ADMIN_URLS)
def test_every_admin_url_works_for_an_admin(
    admin_client: FlaskClient, app: Flask, url: str
) -> None:
    unknown_payment(app)
    assert admin_client.get(url).status_code == 200


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


def test_wrong_password_and_rate_limit(app: Flask, client: FlaskClient) -> None:
    make_admin(app)
    for _ in range(5):
        assert admin_login(client, "wrong password!").status_code == 400
    assert admin_login(client).status_code == 429  # locked, even with the right password
    assert client.get("/admin/").status_code == 302


def test_actions_without_csrf_are_refused(admin_client: FlaskClient, app: Flask) -> None:
    payment_id = unknown_payment(app)
    response = admin_client.post(
        f"/admin/unknown/{payment_id}/resolve",
        data={"outcome": "succeeded", "reason": "seen at provider"},
    )
    assert response.status_code == 400
    response = admin_client.post(
        "/admin/breakers/stripe", data={"action": "open", "reason": "x", "confirm": "yes"}
    )
    assert response.status_code == 400
    assert payment(app, payment_id).status == PaymentStatus.UNKNOWN


def _token(client: FlaskClient, url: str = "/admin/unknown/") -> str:
    return csrf_token_from(client.get(url).get_data(as_text=True))


def test_resolve_needs_a_reason_and_records_the_admin(
    admin_client: FlaskClient, app: Flask
) -> None:
    payment_id = unknown_payment(app)
    admin_client.post(
        f"/admin/unknown/{payment_id}/resolve",
        data={"outcome": "succeeded", "reason": "", "csrf_token": _token(admin_client)},
    )
    assert payment(app, payment_id).status == PaymentStatus.UNKNOWN
    admin_client.post(
        f"/admin/unknown/{payment_id}/resolve",
        data={
            "outcome": "succeeded",
            "reason": "confirmed in Stripe dashboard",
            "csrf_token": _token(admin_client),
        },
    )
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    with app.app_context():
        last = db.session.scalars(
            select(PaymentTransition).order_by(PaymentTransition.id.desc())
        ).first()
    assert last is not None and last.source.value == "admin"
    assert last.actor == "ops@example.com" and "Stripe dashboard" in last.reason


def test_breaker_controls_are_confirmed_and_audited(admin_client: FlaskClient, app: Flask) -> None:
    admin_client.post(
        "/admin/breakers/stripe",
        data={
            "action": "open",
            "reason": "incident 7",
            "csrf_token": _token(admin_client, "/admin/"),
        },
    )
    with app.app_context():
        assert breaker_for("stripe").snapshot()["state"] == "closed"  # not confirmed
    admin_client.post(
        "/admin/breakers/stripe",
        data={
            "action": "open",
            "reason": "incident 7",
            "confirm": "yes",
            "csrf_token": _token(admin_client, "/admin/"),
        },
    )
    page = admin_client.get("/admin/").get_data(as_text=True)
    assert "FORCED OPEN" in page and "open by ops@example.com: incident 7" in page


def test_overview_shows_an_open_breaker_and_an_unknown_payment(
    admin_client: FlaskClient, app: Flask, sandbox: Any, make_app: Any
) -> None:
    sandbox.add_fault("hang", seconds=3, dialect="stripe")  # the provider hangs
    worker_app = make_app()  # a worker whose breaker opens at the first failure
    breakers = worker_app.config["BREAKERS"]
    breakers["stripe"] = replace(breakers["stripe"], failure_threshold=1)
    with worker_app.app_context():
        created = make_payment(make_order(make_customer()))
        db.session.commit()
        charge_payment(created.id)
        payment_id = created.id
    assert payment(app, payment_id).status == PaymentStatus.UNKNOWN
    page = admin_client.get("/admin/").get_data(as_text=True)
    assert re.search(r'data-provider="stripe" data-state="open"', page)
    assert re.search(r'data-status="unknown".*?<div class="h3 mb-0 count">1</div>', page, re.S)
    unknown_page = admin_client.get("/admin/unknown/").get_data(as_text=True)
    assert f'data-payment="{payment_id}"' in unknown_page
