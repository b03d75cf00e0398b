"""Words that tell the truth: a payment that failed for any reason but the bank's decline
(a provider's 502 an operator resolved as failed) is never "declined" to its customer: not
on its page, not in the email, not in the API's reason."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import AdminUser, Customer, EmailKind, OutboxMessage, Payment, PaymentStatus
from services.backoffice.actions import resolve
from services.notifications.rendering import rendered_message
from services.payments.reads import NOT_COMPLETED, payment_json
from tests.admin_support import make_admin
from tests.factories import make_order, make_payment
from tests.helpers import got, seed_catalog
from tests.shop_support import login


def test_a_failure_that_is_no_decline_is_not_called_one(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    login(client, app, "anna@example.com")
    make_admin(app)
    with app.app_context():
        seed_catalog()
        customer = db.session.scalars(select(Customer)).one()
        payment = make_payment(make_order(customer), "stripe")
        payment.status, payment.last_error = PaymentStatus.UNKNOWN, "provider error 502"
        db.session.commit()
        admin = db.session.scalars(select(AdminUser)).one()
        resolve(payment.id, "failed", "Stripe's Dashboard shows no charge", admin)
        payment_id = payment.id
        email_id = db.session.scalars(
            select(OutboxMessage.id).where(OutboxMessage.kind == EmailKind.PAYMENT_FAILED)
        ).one()
        email = rendered_message(email_id)
    page = client.get(f"/payments/{payment_id}").get_data(as_text=True)
    assert "could not be completed" in page and "declined" not in page
    assert email is not None
    assert "could not be completed" in email.text and "declined" not in email.text
    with app.app_context():  # what GET /api/payments/<id> answers (services/payments/reads)
        body = payment_json(got(Payment, payment_id))
    assert body["decline_code"] is None
    assert body["transitions"][-1]["reason"] == NOT_COMPLETED
