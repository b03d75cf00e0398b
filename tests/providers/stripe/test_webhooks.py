"""Stripe's webhook scheme: Stripe-Signature verification; payment_intent and payout events."""

from __future__ import annotations

import json
import time

import pytest

from providers.events import WebhookError
from providers.stripe.webhooks import parse_stripe, verify_stripe
from sandbox.events import stripe_signature

SECRET = "whsec_test"


def test_any_matching_v1_signature_passes() -> None:
    body, now = b'{"id": "evt_1"}', int(time.time())
    good = stripe_signature(SECRET, body, now)
    rotated = f"{good},v1={'0' * 64}"  # Stripe sends several during a secret rotation
    verify_stripe({"stripe-signature": rotated}, body, SECRET, now)
    with pytest.raises(WebhookError, match="no valid signature"):
        verify_stripe({"stripe-signature": good}, body + b" ", SECRET, now)
    with pytest.raises(WebhookError, match="malformed"):
        verify_stripe({"stripe-signature": f"t={now},t={now},v1=ab"}, body, SECRET, now)


def test_a_succeeded_intent_reports_what_it_was_for() -> None:
    event = parse_stripe(
        {
            "id": "evt_1",
            "type": "payment_intent.succeeded",
            "created": 1_800_000_000,
            "data": {
                "object": {
                    "id": "pi_1",
                    "status": "succeeded",
                    "amount": 1200,
                    "amount_received": 1200,
                    "currency": "eur",
                    "metadata": {"payment_id": "42"},
                }
            },
        }
    )
    assert event.outcome == "succeeded" and event.provider_id == "pi_1"
    assert event.report.amount_minor == 1200 and event.report.received_minor == 1200
    assert event.report.currency == "EUR" and event.report.our_id == "42"


def test_other_event_types_have_no_outcome() -> None:
    payload = {
        "id": "evt_2",
        "type": "charge.refunded",
        "created": 1_800_000_000,
        "data": {"object": {}},
    }
    assert parse_stripe(json.loads(json.dumps(payload))).outcome is None


def test_a_failed_intent_carries_its_decline_code() -> None:
    event = parse_stripe(
        {
            "id": "evt_3",
            "type": "payment_intent.payment_failed",
            "created": 1_800_000_000,
            "data": {
                "object": {
                    "id": "pi_3",
                    "last_payment_error": {"decline_code": "insufficient_funds"},
                }
            },
        }
    )
    assert event.outcome == "failed" and event.decline_code == "insufficient_funds"


def test_the_documented_subscription_is_every_event_type_we_apply() -> None:
    """docs/operations.md lists what to subscribe the endpoint to: exactly the types the
    parser applies (a missing refund type loses refunds that change later)."""
    import re
    from pathlib import Path

    from providers.stripe.webhooks import REFUND_EVENTS, SUBSCRIBED_EVENTS

    text = (Path(__file__).resolve().parents[3] / "docs" / "operations.md").read_text()
    listed = text.split("<!-- stripe-events -->")[1].split("<!-- /stripe-events -->")[0]
    assert re.findall(r"`([a-z_.]+)`", listed) == list(SUBSCRIBED_EVENTS)
    assert "charge.refund.updated" in REFUND_EVENTS


def test_a_payout_event_carries_stripes_payout_as_published() -> None:
    """Stripe's own payout object (tests/fixtures/stripe_objects.json, from stripe/openapi)
    in a payout.paid event: the payout's id, status, amount, currency and arrival date."""
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "stripe_objects.json"
    payout = json.loads(fixtures.read_text())["payout"]
    event = parse_stripe(
        {"id": "evt_1", "type": "payout.paid", "created": 1_700_000_000, "data": {"object": payout}}
    )
    assert (event.kind, event.provider_id) == ("payout", payout["id"])
    assert event.payout is not None
    assert (event.payout.status, event.payout.amount_minor, event.payout.currency) == (
        "in_transit",
        1100,
        "USD",
    )
    assert event.payout.arrival_date is not None
    assert event.payout.arrival_date.timestamp() == payout["arrival_date"]
    assert event.payout.failure_code is None


@pytest.mark.parametrize(
    "fields",
    [{"amount": True}, {"amount": "1100"}, {"arrival_date": 10**12}, {"currency": 5}],
)
def test_a_payout_event_keeps_no_field_it_cannot_believe(fields: dict) -> None:
    payout = {"id": "po_1", "status": "paid", "amount": 1100, "currency": "eur", **fields}
    event = parse_stripe(
        {"id": "evt_1", "type": "payout.paid", "created": 1_700_000_000, "data": {"object": payout}}
    )
    assert event.payout is not None
    facts = event.payout
    kept = {
        "amount": facts.amount_minor,
        "arrival_date": facts.arrival_date,
        "currency": facts.currency,
    }
    assert kept[next(iter(fields))] is None
