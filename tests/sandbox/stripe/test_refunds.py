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
    # allowed_payment_method_types is echoed as the intent's payment_method_types (the
    # object has no field of the parameter's name: Stripe's fixtures are the judge).
    assert intent.payment_method_types == ["card"]
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


def test_a_refund_of_the_refund_fail_card_succeeds_then_fails(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    """Stripe's test card 4000000000005126: the refund begins succeeded and later fails,
    with charge.refund.updated (and refund.updated, refund.failed)."""
    intent = _charged(sdk, "pm_card_refundFail")
    refund = sdk.v1.refunds.create(params={"payment_intent": intent.id})
    assert refund.status == "succeeded" and refund.failure_reason is None
    assert sandbox.settle_refunds() == 1
    later = sdk.v1.refunds.retrieve(refund.id)
    assert later.status == "failed" and later.failure_reason == "expired_or_canceled_card"
    types = [e["type"] for e in sandbox.events()]
    assert types[-3:] == ["charge.refund.updated", "refund.updated", "refund.failed"]
    assert sandbox.settle_refunds() == 0  # once


def test_a_refund_of_the_pending_refund_card_pends_then_succeeds(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    """Stripe's test card 4000000000007726: the refund begins pending and later succeeds."""
    intent = _charged(sdk, "pm_card_pendingRefund")
    refund = sdk.v1.refunds.create(params={"payment_intent": intent.id})
    assert refund.status == "pending"
    assert [e["type"] for e in sandbox.events()][-1] == "refund.created"
    assert sandbox.settle_refunds() == 1
    assert sdk.v1.refunds.retrieve(refund.id).status == "succeeded"
    types = [e["type"] for e in sandbox.events()]
    assert types[-2:] == ["charge.refund.updated", "refund.updated"]
