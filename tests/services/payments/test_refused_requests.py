"""When the provider refuses our request rather than the card: a 400
invalid_request_error fails the payment as "could not be processed" (never "your card
was declined") and alerts ops at once; a 401 alerts ops within seconds, once per
outage, not at the next periodic check."""

from __future__ import annotations

import time
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from prometheus_client import REGISTRY
from sqlalchemy import select

from extensions import db
from models import Alert, AlertKind, Customer, EmailKind, OutboxMessage, PaymentStatus
from services.backoffice import alerts
from services.notifications.rendering import render_email
from services.payments.answers import COULD_NOT_PROCESS
from tests.factories import make_order, make_payment
from tests.helpers import charge_payment, committed_payment, payment, run_maintenance_jobs
from tests.shop_support import login


def _refusals(reason: str) -> float:
    labels = {"provider": "stripe", "reason": reason}
    return REGISTRY.get_sample_value("provider_request_refusals_total", labels) or 0.0


def _alerts(app: Flask, kind: AlertKind) -> list[Alert]:
    with app.app_context():
        return list(db.session.scalars(select(Alert).where(Alert.kind == kind)))


def test_an_invalid_request_is_could_not_be_processed_and_alerts_ops(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    sandbox.add_fault("error", status=400, dialect="stripe", endpoint="create")
    counted = _refusals("invalid_request")
    login(client, app)
    with app.app_context():
        shopper = db.session.scalars(
            select(Customer).where(Customer.email == "shopper@example.com")
        ).one()
        payment_id = make_payment(make_order(shopper)).id
        db.session.commit()
    with app.app_context():
        charge_payment(payment_id)
    failed = payment(app, payment_id)
    assert failed.status == PaymentStatus.FAILED and failed.decline_code == COULD_NOT_PROCESS
    page = client.get(f"/payments/{payment_id}").get_data(as_text=True)
    assert "could not be processed" in page and "declined" not in page
    with app.app_context():
        email = db.session.scalars(
            select(OutboxMessage).where(OutboxMessage.kind == EmailKind.PAYMENT_FAILED)
        ).one()
        body = render_email(email).get_body(preferencelist=("plain",))
        assert body is not None
        text = body.get_content()
    assert "could not be processed" in text and "declined" not in text
    assert _refusals("invalid_request") == counted + 1
    run_maintenance_jobs(app)  # the alert the provider worker queued at once
    (alert,) = _alerts(app, AlertKind.INVALID_REQUEST)
    assert "invalid" in alert.detail and f"charge {payment_id} failed" in alert.detail
    # The next payment fails the same way: one alert for the hour, not one per payment.
    second = committed_payment(app)
    with app.app_context():
        charge_payment(second)
    run_maintenance_jobs(app)
    assert len(_alerts(app, AlertKind.INVALID_REQUEST)) == 1


def test_a_refused_key_alerts_in_seconds_once_per_outage(app: Flask, sandbox: Any) -> None:
    sandbox.add_fault("error", status=401, dialect="stripe")  # every request of ours
    started = time.monotonic()
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    run_maintenance_jobs(app)
    (alert,) = _alerts(app, AlertKind.PROVIDER_KEY)
    assert time.monotonic() - started < 5
    assert "401" in alert.detail
    assert payment(app, payment_id).status == PaymentStatus.PENDING  # deferred, not failed
    # Another refusal, and the periodic check, in the same outage: still one alert.
    with app.app_context():
        charge_payment(committed_payment(app))
        alerts.check()
    run_maintenance_jobs(app)
    assert len(_alerts(app, AlertKind.PROVIDER_KEY)) == 1
    with app.app_context():
        ops = db.session.scalars(
            select(OutboxMessage).where(OutboxMessage.kind == EmailKind.OPS_ALERT)
        ).all()
    assert len(ops) == 1
