"""A payment's page in the dashboard: the verdict above the timeline."""

from __future__ import annotations

import re
import uuid
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import Refund
from services.refunds.issue import refund_payment
from tests.admin_support import admin_as, admin_csrf
from tests.helpers import charge_payment, charged, committed_payment, send_refund


def test_the_admin_page_tells_the_story(
    app: Flask, admin_client: FlaskClient, sandbox: Any
) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    page = admin_client.get(f"/admin/payment/{payment_id}").get_data(as_text=True)
    assert 'class="lead verdict">Charged once: pi_' in page and "event-call" in page
    assert admin_client.get("/admin/payment/999999").status_code == 404


def test_a_refunder_refunds_from_the_payments_own_page_and_its_ids_are_links(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    payment_id = charged(app, committed_payment(app))
    viewer_page = admin_as(app, client, "viewer").get(f"/admin/payment/{payment_id}")
    assert "Refund this payment" not in viewer_page.get_data(as_text=True)  # not theirs
    refunder = admin_as(app, app.test_client(), "refunder")
    page = refunder.get(f"/admin/payment/{payment_id}").get_data(as_text=True)
    form = re.search(
        r'(?s)<form method="post" action="([^"]+)" class="card card-body refund-form.*?</form>',
        page,
    )
    assert form and form.group(1) == f"/admin/refunds/payment/{payment_id}"
    fields = dict(re.findall(r'name="(csrf_token|idempotency_key)" value="([^"]+)"', form.group(0)))
    review = refunder.post(form.group(1), data={**fields, "amount": "", "reason": "broken mug"})
    hidden = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', review.text)
    assert refunder.post(form.group(1), data=dict(hidden)).status_code == 303
    with app.app_context():
        [refund_id] = db.session.scalars(select(Refund.id)).all()
    story = refunder.get(f"/admin/payment/{payment_id}").get_data(as_text=True)
    assert f'href="/admin/admin_refunds/details/?id={refund_id}">refund #{refund_id}</a>' in story


def test_after_a_partial_refund_the_header_says_what_is_left(
    app: Flask, admin_client: FlaskClient, sandbox: Any
) -> None:
    payment_id = charged(app, committed_payment(app))
    with app.app_context():
        refund_payment(payment_id, 500, "one cup of two broke", "ops@example.com", uuid.uuid4())
        send_refund(db.session.scalars(select(Refund.id)).one())
    page = admin_client.get(f"/admin/payment/{payment_id}").get_data(as_text=True)
    assert re.search(
        rf"<h2>Payment #{payment_id}, €10.00, customer\d+@example.com, Visa 4242", page
    )
    assert "succeeded, partly refunded" in page
    amounts = dict(re.findall(r'data-amount="(\w+)">(?:<strong>)?([^<]+)', page))
    assert amounts == {
        "captured": "€10.00",
        "refunded": "€5.00",
        "disputed": "€0.00",
        "net": "€5.00",
    }


def test_times_are_in_the_admins_zone(app: Flask, admin_client: FlaskClient, sandbox: Any) -> None:
    payment_id = charged(app, committed_payment(app))
    assert re.search(
        r"\d\d:\d\d:\d\d UTC</td>", admin_client.get(f"/admin/payment/{payment_id}").text
    )
    chosen = admin_client.post(
        "/admin/users/time-zone",
        data={"time_zone": "Asia/Tokyo", "csrf_token": admin_csrf(admin_client)},
        follow_redirects=True,
    )
    assert "times are shown in Asia/Tokyo" in chosen.text
    page = admin_client.get(f"/admin/payment/{payment_id}").text
    assert re.search(r"\d\d:\d\d:\d\d JST</td>", page) and " UTC</td>" not in page
    refused = admin_client.post(
        "/admin/users/time-zone",
        data={"time_zone": "Mars/Olympus", "csrf_token": admin_csrf(admin_client)},
        follow_redirects=True,
    )
    assert "no time zone" in refused.text and "Mars/Olympus" in refused.text
