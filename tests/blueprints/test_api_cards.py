"""The API's card payments: a payment method on every payment (the provider's token,
never card data), and `next_action` while the customer must authenticate."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from extensions import db
from models import Payment
from services.payments.authentication import check_authentication
from tests.helpers import api_customer, api_order, api_pay, charge_payment, run_jobs
from tests.sandbox_support import answer_challenge


def _payments(app: Flask) -> int:
    with app.app_context():
        return int(db.session.scalar(select(func.count()).select_from(Payment)) or 0)


def _card(sandbox: Any, number: str = "4242424242424242") -> str:
    """A PaymentMethod made the way Stripe.js makes it: with the publishable key."""
    response = requests.post(
        f"{sandbox.url}/v1/payment_methods",
        data={
            "type": "card",
            "card[number]": number,
            "card[exp_month]": "12",
            "card[exp_year]": "34",
            "card[cvc]": "123",
        },
        headers={"Authorization": "Bearer pk_test_sandbox"},
        timeout=5,
    )
    assert response.status_code == 200, response.text
    return str(response.json()["id"])


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (None, "payment_method_missing"),
        ({}, "payment_method_missing"),
        ({"payment_method": ""}, "payment_method_missing"),
        ({"payment_method": "4242424242424242"}, "payment_method_invalid"),
        ({"payment_method": "pm_bad token"}, "payment_method_invalid"),
        ({"payment_method": 42}, "payment_method_invalid"),
        # a token is its provider's own: a Braintree nonce is not Stripe's, nor the reverse
        ({"payment_method": "fake-valid-nonce", "provider": "stripe"}, "payment_method_invalid"),
        ({"payment_method": "pm_card_visa", "provider": "braintree"}, "payment_method_invalid"),
        ({"payment_method": "pm_card_visa", "provider": "paypal"}, "provider_invalid"),
        ({"payment_method": "pm_card_visa", "provider": 1}, "provider_invalid"),
    ],
)
def test_a_missing_or_malformed_payment_method_is_422_and_writes_nothing(
    app: Flask, client: FlaskClient, api: dict[str, str], body: Any, code: str
) -> None:
    order = api_order(client, api)
    response = client.post(
        f"/api/orders/{order['id']}/payments",
        json=body,
        headers={**api, "Idempotency-Key": str(uuid.uuid4())},
    )
    assert response.status_code == 422
    assert response.get_json()["error"]["code"] == code
    topup = client.post(
        "/api/wallet/topups",
        json={"currency": "EUR", "amount_minor": 500, **(body or {})},
        headers={**api, "Idempotency-Key": str(uuid.uuid4())},
    )
    assert topup.status_code == 422 and topup.get_json()["error"]["code"] == code
    assert _payments(app) == 0


def test_a_payment_stores_its_payment_method_and_charges_with_it(
    app: Flask, client: FlaskClient, api: dict[str, str], sandbox: Any
) -> None:
    order = api_order(client, api)
    created = api_pay(client, api, order["id"], payment_method="pm_card_chargeDeclined")
    assert created.status_code == 201
    assert created.get_json()["payment_method"] == "pm_card_chargeDeclined"
    run_jobs(app)
    answer = client.get(f"/api/payments/{created.get_json()['id']}", headers=api).get_json()
    assert answer["status"] == "failed" and answer["decline_code"] == "generic_decline"


@pytest.mark.parametrize("provider", [None, "braintree"])
def test_a_braintree_nonce_is_charged_at_braintree(
    app: Flask,
    client: FlaskClient,
    api: dict[str, str],
    sandbox: Any,
    provider: str | None,
) -> None:
    """The token's shape names its provider when the client does not (the lean statement
    and the ORM path alike); the payment never moves from it."""
    order = api_order(client, api)
    body = {"payment_method": "fake-processor-declined-visa-nonce"}
    created = client.post(
        f"/api/orders/{order['id']}/payments",
        json={**body, **({"provider": provider} if provider else {})},
        headers={**api, "Idempotency-Key": str(uuid.uuid4())},
    )
    assert created.status_code == 201, created.get_data(as_text=True)
    assert created.get_json()["provider"] == "braintree"
    run_jobs(app, "braintree")
    answer = client.get(f"/api/payments/{created.get_json()['id']}", headers=api).get_json()
    assert answer["status"] == "failed" and answer["decline_code"] == "2000"  # Do Not Honor


def test_a_repeat_with_another_payment_method_is_refused(
    app: Flask, client: FlaskClient, api: dict[str, str]
) -> None:
    order = api_order(client, api)
    key = str(uuid.uuid4())
    first = api_pay(client, api, order["id"], key)
    again = api_pay(client, api, order["id"], key, payment_method="pm_card_mastercard")
    assert again.status_code == 422
    assert again.get_json()["error"]["code"] == "idempotency_key_reused"
    assert again.get_json()["error"]["payment_id"] == first.get_json()["id"]
    assert _payments(app) == 1


def test_next_action_while_the_customer_must_authenticate(
    app: Flask, client: FlaskClient, api: dict[str, str], sandbox: Any
) -> None:
    order = api_order(client, api)
    card = _card(sandbox, "4000002500003155")
    payment_id = api_pay(client, api, order["id"], payment_method=card).get_json()["id"]
    run_jobs(app)
    waiting = client.get(f"/api/payments/{payment_id}", headers=api).get_json()
    assert waiting["status"] == "requires_action" and waiting["is_final"] is False
    action = waiting["next_action"]
    assert action["type"] == "redirect_to_url"
    assert action["url"].startswith(f"{sandbox.url}/3d_secure/authenticate/")
    answer_challenge(action["url"])
    with app.app_context():
        check_authentication(payment_id)
    done = client.get(f"/api/payments/{payment_id}", headers=api).get_json()
    assert done["status"] == "succeeded" and done["next_action"] is None
    assert sandbox.succeeded_charges(str(payment_id)) == 1


def test_a_payment_method_used_before_is_the_providers_decline(
    app: Flask, client: FlaskClient, api: dict[str, str], sandbox: Any
) -> None:
    card = _card(sandbox)  # one customer's card, made single-use by Stripe.js
    first = api_pay(client, api, api_order(client, api)["id"], payment_method=card)
    run_jobs(app)
    assert (
        client.get(f"/api/payments/{first.get_json()['id']}", headers=api).get_json()["status"]
        == "succeeded"
    )
    _, other = api_customer(app, "other@example.com")
    second = api_pay(client, other, api_order(client, other)["id"], payment_method=card)
    assert second.status_code == 201  # its shape is fine: only the provider can tell
    payment_id = second.get_json()["id"]
    with app.app_context():
        charge_payment(payment_id)
    refused = client.get(f"/api/payments/{payment_id}", headers=other).get_json()
    assert refused["status"] == "failed" and refused["decline_code"]
    assert sandbox.succeeded_charges(str(payment_id)) == 0
