"""Stripe Customers and PaymentMethods through our client, judged by Stripe's own SDK:
one customer per shop customer (a repeat of its key is the same one), and a card's
fingerprint the same for every PaymentMethod of one card."""

from __future__ import annotations

from typing import Any

import requests
import stripe

from providers.outcomes import Declined, NotSent
from providers.stripe.customers import card_fingerprint_of
from tests.providers.stripe.support import charge_request, client


def test_a_customer_is_made_once_per_shop_customer(sandbox: Any, sdk: stripe.StripeClient) -> None:
    stripe_api = client(sandbox)
    made = stripe_api.create_customer(41)
    assert isinstance(made, str) and made.startswith("cus_")
    assert stripe_api.create_customer(41) == made  # the same key: the same customer
    assert stripe_api.create_customer(42) != made
    found = sdk.v1.customers.retrieve(made)
    assert found.metadata is not None and found.metadata["customer_id"] == "41"
    refused = client(sandbox, secret_key="sk_wrong").create_customer(43)
    assert isinstance(refused, NotSent) and "authentication" in refused.reason


def test_a_cards_fingerprint_is_the_same_for_each_of_its_payment_methods(sandbox: Any) -> None:
    def typed(number: str) -> str:
        form = {
            "type": "card",
            "card[number]": number,
            "card[exp_month]": "12",
            "card[exp_year]": "2040",
            "card[cvc]": "123",
        }
        made = requests.post(
            f"{sandbox.url}/v1/payment_methods",
            data=form,
            headers={"Authorization": "Bearer pk_test_sandbox"},
            timeout=5,
        )
        assert made.status_code == 200, made.text
        return str(made.json()["id"])

    stripe_api = client(sandbox)
    first, again = typed("4000000000000002"), typed("4000000000000002")
    other = typed("4242424242424242")
    assert first != again
    assert stripe_api.card_fingerprint(first) == stripe_api.card_fingerprint(again)
    assert stripe_api.card_fingerprint(first) != stripe_api.card_fingerprint(other)
    assert stripe_api.card_fingerprint("pm_nobody") is None  # resource_missing
    assert stripe_api.card_fingerprint("../v1/customers") is None  # never a path of ours
    # A decline names the card's fingerprint too (Stripe's card_error carries the method).
    declined = stripe_api.charge(charge_request(payment_method=first))
    assert isinstance(declined, Declined)
    assert declined.card_fingerprint == stripe_api.card_fingerprint(first)


def test_a_fingerprint_from_untrusted_json_is_a_short_token_or_nothing() -> None:
    assert card_fingerprint_of({"card": {"fingerprint": "Xt5EWLLDS7FJjR1c"}}) == "Xt5EWLLDS7FJjR1c"
    for method in (None, "pm_1", {"card": None}, {"card": {"fingerprint": 5}}):
        assert card_fingerprint_of(method) is None
    assert card_fingerprint_of({"card": {"fingerprint": "x" * 65}}) is None
    assert card_fingerprint_of({"card": {"fingerprint": "a b"}}) is None
