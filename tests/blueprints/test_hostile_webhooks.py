"""Validly signed notifications with values no provider sends (a fuzzer with our
development keys): each is refused with a 4xx or set aside with its reason, changes no
money, and never blocks the next event of either provider, which applies at once."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import Payment, PaymentStatus, ProcessedWebhook, WebhookState
from providers.braintree import DEV_PRIVATE_KEY, DEV_PUBLIC_KEY
from sandbox.braintree.notifications import signed_form
from sandbox.braintree.xml import render
from tests.helpers import (
    committed_payment,
    got,
    run_maintenance_jobs,
    signed_post,
    stripe_event,
)


def _braintree_post(client: FlaskClient, notification: dict[str, Any]) -> Any:
    xml = render("notification", notification)
    body = urlencode(signed_form(DEV_PUBLIC_KEY, DEV_PRIVATE_KEY, xml))
    return client.post(
        "/webhooks/braintree", data=body, content_type="application/x-www-form-urlencoded"
    )


def _settled(txn_id: str, amount: str, **fields: Any) -> dict[str, Any]:
    return {
        "timestamp": fields.pop("timestamp", datetime.now(UTC)),
        "kind": fields.pop("kind", "transaction_settled"),
        "subject": {
            "transaction": {
                "id": txn_id,
                "type": "sale",
                "amount": amount,
                "currency_iso_code": "EUR",
                "status": "settled",
                **fields,
            }
        },
    }


HOSTILE = {
    "a date before the calendar": _settled("txn1", "10.00", timestamp="0001-01-01T00:00:00+23:59"),
    "a date far ahead": _settled("txn1", "10.00", timestamp="9999-12-31T23:59:59Z"),
    "an exponent of 900,000": _settled("txn1", "1E+900000"),
    "infinity": _settled("txn1", "Infinity"),
    "not a number": _settled("txn1", "NaN"),
    "a fraction of a cent": _settled("txn1", "10.001"),
    "an id past its column": _settled("t" * 256, "10.00"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_braintree_value_is_refused_and_blocks_nothing(
    app: Flask, client: FlaskClient, name: str
) -> None:
    answer = _braintree_post(client, HOSTILE[name])
    assert answer.status_code < 500, answer.text
    braintree_id = committed_payment(app, "braintree", provider_payment_id="txn_next")
    stripe_id = committed_payment(app)
    with app.app_context():
        reference = str(got(Payment, braintree_id).idempotency_key)
    following = _settled("txn_next", "10.00", order_id=reference)
    assert _braintree_post(client, following).status_code == 200
    assert signed_post(client, stripe_event(stripe_id)).status_code == 200
    run_maintenance_jobs(app)
    with app.app_context():
        for payment_id in (braintree_id, stripe_id):
            assert got(Payment, payment_id).status == PaymentStatus.SUCCEEDED, name
        states = db.session.scalars(select(ProcessedWebhook.state)).all()
    # The hostile one, if recorded at all, is set aside: nothing waits behind it.
    assert WebhookState.PENDING not in states


def test_a_settlement_declined_naming_another_order_moves_no_money(
    app: Flask, client: FlaskClient
) -> None:
    """Checked against the payment like every report of a charge (a settled one with a
    wrong order id was refused; a declined one was applied)."""
    payment_id = committed_payment(app, "braintree", provider_payment_id="txn_ours")
    charged = _settled("txn_ours", "10.00", order_id="someone-elses-reference")
    declined = {**charged, "kind": "transaction_settlement_declined"}
    with app.app_context():
        payment = got(Payment, payment_id)
        payment.status = PaymentStatus.SUCCEEDED  # as if its sale's answer said so
        db.session.commit()
    assert _braintree_post(client, declined).status_code == 200
    run_maintenance_jobs(app)
    with app.app_context():
        found = got(Payment, payment_id)
        record = db.session.scalars(select(ProcessedWebhook)).one()
        assert found.status == PaymentStatus.SUCCEEDED
        assert record.state == WebhookState.REJECTED, record.note
