"""The sandbox's Disputes, judged by Stripe's SDK: Stripe's dispute test cards open one
as the charge succeeds; evidence wins or loses it, closing accepts it; each step has
Stripe's events, and the money moves only for a chargeback."""

from __future__ import annotations

from typing import Any

import pytest
import stripe


def _disputed(sdk: stripe.StripeClient, method: str = "pm_card_createDispute") -> Any:
    intent = sdk.v1.payment_intents.create(
        params={
            "amount": 2000,
            "currency": "eur",
            "confirm": True,
            "payment_method": method,
            "allowed_payment_method_types": ["card"],
            "metadata": {"payment_id": "9"},
        }
    )
    assert intent.status == "succeeded"
    [dispute] = sdk.v1.disputes.list(params={"payment_intent": intent.id}).data
    return dispute


def _types(sandbox: Any) -> list[str]:
    return [e["type"] for e in sandbox.events() if e["type"].startswith("charge.dispute.")]


def test_a_chargeback_won_with_evidence_gives_the_money_back(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    dispute = _disputed(sdk)
    assert (dispute.status, dispute.reason, dispute.amount) == (
        "needs_response",
        "fraudulent",
        2000,
    )
    assert dispute.evidence_details.due_by > dispute.created
    assert [t.amount for t in dispute.balance_transactions] == [-2000]
    assert _types(sandbox) == ["charge.dispute.created", "charge.dispute.funds_withdrawn"]
    won = sdk.v1.disputes.update(
        dispute.id, params={"evidence": {"uncategorized_text": "winning_evidence"}}
    )
    assert won.status == "won" and won.evidence_details.submission_count == 1
    assert sum(t.amount for t in won.balance_transactions) == 0
    assert _types(sandbox)[2:] == [
        "charge.dispute.updated",
        "charge.dispute.closed",
        "charge.dispute.funds_reinstated",
    ]
    assert sdk.v1.disputes.retrieve(dispute.id).status == "won"
    # Each event, read back through the SDK, carries the dispute as Stripe's own type.
    for listed in sandbox.events():
        if listed["type"].startswith("charge.dispute."):
            event = sdk.v1.events.retrieve(listed["id"])
            assert isinstance(event.data.object, stripe.Dispute)
            assert event.data.object.id == dispute.id


@pytest.mark.parametrize("how", ["losing_evidence", "close"])
def test_a_chargeback_lost_keeps_the_money_out(
    sdk: stripe.StripeClient, sandbox: Any, how: str
) -> None:
    dispute = _disputed(sdk, "pm_card_createDisputeProductNotReceived")
    assert dispute.reason == "product_not_received"
    if how == "close":
        lost = sdk.v1.disputes.close(dispute.id)
    else:
        lost = sdk.v1.disputes.update(
            dispute.id, params={"evidence": {"uncategorized_text": "losing_evidence"}}
        )
    assert lost.status == "lost" and [t.amount for t in lost.balance_transactions] == [-2000]
    assert _types(sandbox)[-1] == "charge.dispute.closed"
    with pytest.raises(stripe.InvalidRequestError):
        sdk.v1.disputes.close(dispute.id)  # closed already


def test_an_inquiry_moves_no_money(sdk: stripe.StripeClient, sandbox: Any) -> None:
    dispute = _disputed(sdk, "pm_card_createDisputeInquiry")
    assert dispute.status == "warning_needs_response" and dispute.balance_transactions == []
    closed = sdk.v1.disputes.update(
        dispute.id, params={"evidence": {"uncategorized_text": "winning_evidence"}}
    )
    assert closed.status == "warning_closed" and closed.balance_transactions == []
    assert "charge.dispute.funds_withdrawn" not in _types(sandbox)


def test_an_ordinary_card_is_not_disputed_and_unknown_disputes_are_404(
    sdk: stripe.StripeClient,
) -> None:
    intent = sdk.v1.payment_intents.create(
        params={
            "amount": 900,
            "currency": "eur",
            "confirm": True,
            "payment_method": "pm_card_visa",
            "allowed_payment_method_types": ["card"],
        }
    )
    assert sdk.v1.disputes.list(params={"payment_intent": intent.id}).data == []
    with pytest.raises(stripe.InvalidRequestError) as missing:
        sdk.v1.disputes.retrieve("dp_nope")
    assert missing.value.http_status == 404
