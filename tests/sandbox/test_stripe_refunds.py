"""The sandbox's Refunds, judged by Stripe's SDK: create (idempotent), retrieve, list by
payment intent, the errors of an over-refund, and the refund events."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import stripe


def _charged(sdk: stripe.StripeClient, method: str = "pm_card_visa") -> Any:
    return sdk.v1.payment_intents.create(
        params={
            "amount": 2000,
            "currency": "eur",
            "confirm": True,
            "payment_method": method,
            "allowed_payment_method_types": ["card"],
            "metadata": {"payment_id": "9"},
        }
    )


def test_refund_retrieve_and_list(sdk: stripe.StripeClient, sandbox: Any) -> None:
    intent = _charged(sdk)
    key = str(uuid.uuid4())
    params: Any = {"payment_intent": intent.id, "amount": 500, "metadata": {"refund_id": "3"}}
    refund = sdk.v1.refunds.create(params=params, options={"idempotency_key": key})
    assert refund.object == "refund" and refund.status == "succeeded" and refund.amount == 500
    assert refund.payment_intent == intent.id
    assert refund.metadata is not None and refund.metadata["refund_id"] == "3"
    again = sdk.v1.refunds.create(params=params, options={"idempotency_key": key})
    assert again.id == refund.id  # a replay, not a second refund
    assert sdk.v1.refunds.retrieve(refund.id).amount == 500
    rest = sdk.v1.refunds.create(params={"payment_intent": intent.id})  # what is left
    assert rest.amount == 1500
    listed = sdk.v1.refunds.list(params={"payment_intent": intent.id})
    assert [r.id for r in listed.data] == [rest.id, refund.id]  # newest first
    types = [e["type"] for e in sandbox.events()]
    assert types.count("refund.created") == 2 and types.count("charge.refunded") == 2


def test_over_refunds_and_unknown_refunds_are_errors(sdk: stripe.StripeClient) -> None:
    intent = _charged(sdk)
    with pytest.raises(stripe.InvalidRequestError) as too_much:
        sdk.v1.refunds.create(params={"payment_intent": intent.id, "amount": 2001})
    assert too_much.value.code == "amount_too_large"
    sdk.v1.refunds.create(params={"payment_intent": intent.id})
    with pytest.raises(stripe.InvalidRequestError) as done:
        sdk.v1.refunds.create(params={"payment_intent": intent.id, "amount": 1})
    assert done.value.code == "charge_already_refunded"
    with pytest.raises(stripe.InvalidRequestError) as missing:
        sdk.v1.refunds.retrieve("re_nothing")
    assert missing.value.code == "resource_missing"


def test_refunds_of_the_refund_fail_card_fail(sdk: stripe.StripeClient, sandbox: Any) -> None:
    intent = _charged(sdk, "pm_card_refundFail")
    refund = sdk.v1.refunds.create(params={"payment_intent": intent.id})
    assert refund.status == "failed" and refund.failure_reason == "expired_or_canceled_card"
    types = [e["type"] for e in sandbox.events()]
    assert "refund.updated" in types and "refund.failed" in types
