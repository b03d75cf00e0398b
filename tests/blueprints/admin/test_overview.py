"""The overview and the unknown payments: resolving needs a reason and records the admin,
breaker controls need a confirmation, an open breaker and an unknown payment show."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import Payment, PaymentStatus, PaymentTransition
from services.platform.provider_clients import breaker_for
from tests.admin_support import admin_csrf, force_open
from tests.factories import make_customer, make_order, make_payment
from tests.helpers import charge_payment, committed_payment, payment, tune_breaker, unknown_payment


def test_resolve_needs_a_reason_and_records_the_admin(
    admin_client: FlaskClient, app: Flask
) -> None:
    payment_id = unknown_payment(app)
    admin_client.post(
        f"/admin/unknown/{payment_id}/resolve",
        data={
            "confirm": "yes",
            "outcome": "succeeded",
            "reason": "",
            "csrf_token": admin_csrf(admin_client),
        },
    )
    assert payment(app, payment_id).status == PaymentStatus.UNKNOWN
    admin_client.post(
        f"/admin/unknown/{payment_id}/resolve",
        data={
            "confirm": "yes",
            "outcome": "succeeded",
            "reason": "confirmed in Stripe dashboard",
            "csrf_token": admin_csrf(admin_client),
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
            "csrf_token": admin_csrf(admin_client, "/admin/"),
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
            "csrf_token": admin_csrf(admin_client, "/admin/"),
        },
    )
    page = admin_client.get("/admin/").get_data(as_text=True)
    assert "FORCED OPEN" in page and "open by ops@example.com: incident 7" in page


def test_overview_shows_an_open_breaker_and_an_unknown_payment(
    admin_client: FlaskClient, app: Flask, sandbox: Any, make_app: Any
) -> None:
    sandbox.add_fault("hang", seconds=3, dialect="stripe", endpoint="create")  # charges hang
    worker_app = make_app()  # a worker whose breaker opens at the first failure
    tune_breaker(worker_app, "stripe", failure_threshold=1)
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


def test_resolving_needs_a_confirmation_and_reconcile_now_says_due_now(
    admin_client: FlaskClient, app: Flask
) -> None:
    payment_id = unknown_payment(app)
    unconfirmed = admin_client.post(
        f"/admin/unknown/{payment_id}/resolve",
        data={
            "outcome": "failed",
            "reason": "not charged at Stripe",
            "csrf_token": admin_csrf(admin_client),
        },
        follow_redirects=True,
    )
    assert "tick the confirmation" in unconfirmed.get_data(as_text=True)
    assert payment(app, payment_id).status == PaymentStatus.UNKNOWN
    admin_client.post(
        f"/admin/unknown/{payment_id}/reconcile", data={"csrf_token": admin_csrf(admin_client)}
    )
    page = admin_client.get("/admin/unknown/").get_data(as_text=True)
    assert "due now" in page  # not a time in the past, not one five minutes out


def test_breaker_history_reads_as_times_not_epoch_numbers(
    admin_client: FlaskClient, app: Flask
) -> None:
    assert force_open(admin_client) in (302, 303)
    page = admin_client.get("/admin/").get_data(as_text=True)
    history = re.search(r"(?s)Recent transitions and overrides</summary>(.*?)</details>", page)
    assert history and re.search(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: forced open", history.group(1)
    )
    assert not re.search(r"\d{13}", history.group(1))


def test_the_unknown_list_names_payments_and_says_the_answer_in_words(
    admin_client: FlaskClient, app: Flask
) -> None:
    empty = admin_client.get("/admin/unknown/").get_data(as_text=True)
    assert (
        "No payment is unknown or waiting for a person." in empty and "still pending" not in empty
    )
    committed_payment(app)  # queued, not sent yet
    assert "1 is still pending" in admin_client.get("/admin/unknown/").get_data(as_text=True)
    stuck = unknown_payment(app)
    with app.app_context():
        found = db.session.get(Payment, stuck)
        assert found is not None
        found.last_error = "read timeout: HTTPConnectionPool(host='x'): Read timed out."
        db.session.commit()
    page = admin_client.get("/admin/unknown/").get_data(as_text=True)
    assert re.search(rf">#{stuck}, €10.00, customer\d+@example.com, stripe, no card yet</a>", page)
    assert "a timeout: no answer in time (it may have acted)<details>" in page
    assert "Read timed out." in page  # the raw text, behind the disclosure
