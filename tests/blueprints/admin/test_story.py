"""A payment's page in the dashboard: the verdict above the timeline."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from services.payments.charging import charge_payment
from tests.helpers import committed_payment


def test_the_admin_page_tells_the_story(
    app: Flask, admin_client: FlaskClient, sandbox: Any
) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    page = admin_client.get(f"/admin/payment/{payment_id}").get_data(as_text=True)
    assert 'class="lead verdict">Charged once: pi_' in page and "event-call" in page
    assert admin_client.get("/admin/payment/999999").status_code == 404
