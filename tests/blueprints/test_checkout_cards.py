"""The pages take a card through the provider's own card entry, and a payment that needs
authentication sends the customer to the bank and back."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from models import PaymentStatus
from tests.helpers import charge_payment, csrf_token_from, payment, queued_job_ids, seed_catalog
from tests.sandbox_support import answer_challenge
from tests.shop_support import checkout_form, login, place_order


def test_the_checkout_page_mounts_stripe_js_and_never_asks_for_the_card(
    app: Flask, shopper: FlaskClient
) -> None:
    order_id = place_order(shopper)
    page = shopper.get(f"/orders/{order_id}/checkout").get_data(as_text=True)
    assert f'<script src="{app.config["STRIPE_JS_URL"]}"></script>' in page
    assert 'src="/static/card.js"' in page
    assert f'data-publishable-key="{app.config["STRIPE_PUBLISHABLE_KEY"]}"' in page
    assert 'name="payment_method" value=""' in page
    # The only named fields are ours: the card's own inputs are made by Stripe.js, unnamed.
    names = set(re.findall(r'<(?:input|select)[^>]* name="([^"]+)"', page))
    assert names == {"csrf_token", "idempotency_key", "payment_method", "next"}  # no wallet money


def test_paying_without_a_card_asks_for_one_and_writes_nothing(
    app: Flask, shopper: FlaskClient
) -> None:
    order_id = place_order(shopper)
    form = {**checkout_form(shopper, order_id), "payment_method": ""}
    response = shopper.post(f"/orders/{order_id}/pay", data=form, follow_redirects=True)
    assert "Enter your card details to pay." in response.get_data(as_text=True)
    assert "data-card-element" in response.get_data(as_text=True)  # the form again


def test_the_acquirer_takes_a_test_token_from_a_select(app: Flask, make_app: Any) -> None:
    acquirer = make_app(PAYMENTS_DEFAULT_PROVIDER="acquirer")
    client = acquirer.test_client()
    with acquirer.app_context():
        seed_catalog()
    login(client, acquirer)
    order_id = place_order(client)
    page = client.get(f"/orders/{order_id}/checkout").get_data(as_text=True)
    assert '<select name="payment_method">' in page and 'value="card_declined"' in page
    assert "<script" not in page
    form = {**checkout_form(client, order_id), "payment_method": "card_declined"}
    assert client.post(f"/orders/{order_id}/pay", data=form).status_code == 303


def test_the_bank_sends_the_customer_back_to_a_lookup(
    app: Flask, shopper: FlaskClient, sandbox: Any
) -> None:
    order_id = place_order(shopper)
    form = {**checkout_form(shopper, order_id), "payment_method": "pm_card_authenticationRequired"}
    status_url = shopper.post(f"/orders/{order_id}/pay", data=form).headers["Location"]
    payment_id = int(status_url.rsplit("/", 1)[1])
    with app.app_context():
        charge_payment(payment_id)
    page = shopper.get(status_url).get_data(as_text=True)
    waiting = payment(app, payment_id)
    assert waiting.status == PaymentStatus.REQUIRES_ACTION
    assert "Confirm with your bank" in page
    assert f'href="{waiting.action_url}"' in page.replace("&amp;", "&")
    back = answer_challenge(waiting.action_url or "")
    response = shopper.get(back.removeprefix(app.config["PUBLIC_URL"]))
    assert response.status_code == 303 and response.headers["Location"] == f"{status_url}?back=bank"
    checks = [j for j in queued_job_ids(app) if j.startswith("authentication")]
    assert checks == [f"authentication-check-{payment_id}"]


def test_someone_elses_return_is_404_and_queues_nothing(app: Flask, shopper: FlaskClient) -> None:
    order_id = place_order(shopper)
    status_url = shopper.post(
        f"/orders/{order_id}/pay", data=checkout_form(shopper, order_id)
    ).headers["Location"]
    other = app.test_client()
    login(other, app, "other@example.com")
    assert other.get(f"{status_url}/return").status_code == 404
    assert other.get("/payments/99999/return").status_code == 404
    assert csrf_token_from(other.get("/").get_data(as_text=True))
    assert [j for j in queued_job_ids(app) if j.startswith("authentication")] == []
