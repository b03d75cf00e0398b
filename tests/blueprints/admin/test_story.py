"""A payment's page in the dashboard: the verdict above the timeline."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import Refund
from services.payments.charging import charge_payment
from tests.admin_support import admin_as
from tests.helpers import charged, committed_payment


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
