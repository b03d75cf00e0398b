"""The sandbox's Customers, judged by Stripe's own SDK: made (idempotently), read back,
named by a PaymentIntent, and the list of intents filtered by one."""

from __future__ import annotations

from typing import Any

import pytest
import stripe


def test_a_customer_is_made_read_and_named_by_intents(
    sandbox: Any, sdk: stripe.StripeClient
) -> None:
    made = sdk.v1.customers.create(
        {"metadata": {"customer_id": "7"}, "email": "a@example.com"},
        {"idempotency_key": "customer-7"},
    )
    again = sdk.v1.customers.create(
        {"metadata": {"customer_id": "7"}, "email": "a@example.com"},
        {"idempotency_key": "customer-7"},
    )
    assert made.id == again.id and made.id.startswith("cus_")
    assert sdk.v1.customers.retrieve(made.id).email == "a@example.com"
    other = sdk.v1.customers.create({})

    def params(**more: Any) -> Any:
        return {
            "amount": 1000,
            "currency": "eur",
            "payment_method": "pm_card_visa",
            "confirm": True,
            "automatic_payment_methods": {"enabled": True, "allow_redirects": "never"},
            **more,
        }

    mine = sdk.v1.payment_intents.create(params(customer=made.id))
    sdk.v1.payment_intents.create(params(customer=other.id))
    sdk.v1.payment_intents.create(params())
    assert mine.customer == made.id and mine.status == "succeeded"
    listed = sdk.v1.payment_intents.list({"customer": made.id})
    assert [i.id for i in listed.data] == [mine.id]
    assert len(sdk.v1.payment_intents.list({}).data) == 3


def test_an_unknown_customer_is_refused_as_stripe_does(
    sandbox: Any, sdk: stripe.StripeClient
) -> None:
    with pytest.raises(stripe.InvalidRequestError) as refused:
        sdk.v1.payment_intents.create({"amount": 1000, "currency": "eur", "customer": "cus_nobody"})
    assert refused.value.code == "resource_missing" and refused.value.param == "customer"
    with pytest.raises(stripe.InvalidRequestError):
        sdk.v1.customers.retrieve("cus_nobody")
