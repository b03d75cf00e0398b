"""The pages take a card through the provider's own card entry, and a payment that needs
authentication sends the customer to the bank and back."""

from __future__ import annotations

import re
import uuid
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import Payment, PaymentStatus
from services.platform.provider_clients import breaker_for
from tests.helpers import (
    charge_payment,
    csrf_token_from,
    payment,
    queued_job_ids,
    rows,
    seed_catalog,
)
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
    # no wallet money; the provider the page offers is named with the token
    assert names == {"csrf_token", "idempotency_key", "provider", "payment_method", "next"}


def test_paying_without_a_card_asks_for_one_and_writes_nothing(
    app: Flask, shopper: FlaskClient
) -> None:
    order_id = place_order(shopper)
    form = {**checkout_form(shopper, order_id), "payment_method": ""}
    response = shopper.post(f"/orders/{order_id}/pay", data=form, follow_redirects=True)
    assert "Enter your card details to pay." in response.get_data(as_text=True)
    assert "data-card-element" in response.get_data(as_text=True)  # the form again


def _shop(make_app: Any, **config: Any) -> tuple[Flask, FlaskClient]:
    shop = make_app(**config)
    client = shop.test_client()
    with shop.app_context():
        seed_catalog()
    login(client, shop)
    return shop, client


def test_braintree_takes_a_nonce_from_its_hosted_fields(app: Flask, make_app: Any) -> None:
    shop, client = _shop(make_app, PAYMENTS_PROVIDER_WEIGHTS={"stripe": 0, "braintree": 1})
    order_id = place_order(client)
    page = client.get(f"/orders/{order_id}/checkout").get_data(as_text=True)
    assert f'<script src="{shop.config["BRAINTREE_JS_URL"]}"></script>' in page
    assert f'data-tokenization-key="{shop.config["BRAINTREE_TOKENIZATION_KEY"]}"' in page
    assert 'name="provider" value="braintree"' in page and "data-card-element" not in page
    form = checkout_form(client, order_id)
    # A Stripe PaymentMethod is not a Braintree nonce: refused, nothing written.
    refused = client.post(
        f"/orders/{order_id}/pay",
        data={**form, "payment_method": "pm_card_visa"},
        follow_redirects=True,
    )
    assert "The card details could not be read" in refused.get_data(as_text=True)
    assert rows(shop, Payment) == 0
    paid = client.post(f"/orders/{order_id}/pay", data=form)
    assert paid.status_code == 303
    with shop.app_context():
        created = db.session.scalars(select(Payment)).one()
        assert (created.provider, created.payment_method) == ("braintree", "fake-valid-nonce")
    assert queued_job_ids(shop, "braintree") == [f"charge-{created.id}"]


def test_the_page_offers_providers_by_weight_and_never_one_whose_circuit_is_open(
    app: Flask, make_app: Any
) -> None:
    shop, client = _shop(make_app, PAYMENTS_PROVIDER_WEIGHTS={"stripe": 1, "braintree": 1})
    order_id = place_order(client)

    def offered(query: str = "") -> str:
        page = client.get(f"/orders/{order_id}/checkout{query}").get_data(as_text=True)
        found = re.search(r'name="provider" value="([^"]+)"', page)
        return found.group(1) if found else "none"

    assert {offered() for _ in range(40)} == {"stripe", "braintree"}  # 1 in 2**39 to fail
    assert offered("?provider=braintree") == "braintree"  # asked for, and offered
    with shop.app_context():
        breaker_for("stripe").force("open", actor="test", reason="stripe is down")
    assert {offered() for _ in range(10)} | {offered("?provider=stripe")} == {"braintree"}
    with shop.app_context():
        breaker_for("braintree").force("open", actor="test", reason="braintree is down too")
    page = client.get(f"/orders/{order_id}/checkout").get_data(as_text=True)
    assert "Card payments are unavailable right now" in page and 'id="pay"' not in page


def test_a_provider_is_not_offered_for_a_currency_its_account_does_not_take(
    app: Flask, make_app: Any
) -> None:
    shop, client = _shop(
        make_app, PAYMENTS_PROVIDER_WEIGHTS={"stripe": 0, "braintree": 1}, BRAINTREE_CURRENCY="USD"
    )
    order_id = place_order(client)  # in EUR
    page = client.get(f"/orders/{order_id}/checkout").get_data(as_text=True)
    assert "Card payments are unavailable right now" in page
    form = {
        "csrf_token": csrf_token_from(page),
        "idempotency_key": str(uuid.uuid4()),
        "provider": "braintree",
        "payment_method": "fake-valid-nonce",
    }
    response = client.post(f"/orders/{order_id}/pay", data=form, follow_redirects=True)
    assert "Card payments in this currency are unavailable" in response.get_data(as_text=True)
    assert rows(shop, Payment) == 0


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
