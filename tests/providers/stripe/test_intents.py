"""What a PaymentIntent says, read from untrusted JSON: its outcome (the id kept when it
is not final), and the card's brand and last four digits only when they look like it."""

from __future__ import annotations

from typing import Any

import pytest

from providers.outcomes import CardShown, Declined, Succeeded, Unknown
from providers.stripe.intents import card_of, intent_outcome

INTENT: dict[str, Any] = {
    "id": "pi_1",
    "object": "payment_intent",
    "amount": 1250,
    "currency": "eur",
    "metadata": {"payment_id": "7"},
    "amount_received": 1250,
}


def test_a_succeeded_intent_with_its_card_expanded_names_the_card() -> None:
    method = {"id": "pm_1", "card": {"brand": "visa", "last4": "4242"}}
    outcome = intent_outcome({**INTENT, "status": "succeeded", "payment_method": method})
    assert isinstance(outcome, Succeeded) and outcome.card == CardShown("visa", "4242")
    assert outcome.report.our_id == "7" and outcome.report.received_minor == 1250
    plain = intent_outcome({**INTENT, "status": "succeeded", "payment_method": "pm_1"})
    assert isinstance(plain, Succeeded) and plain.card is None  # not expanded: unsaid


@pytest.mark.parametrize(
    "card",
    [
        {"brand": "visa", "last4": "42"},
        {"brand": "visa", "last4": "4242<script>"},
        {"brand": "<b>Visa</b>", "last4": "4242"},
        {"brand": 7, "last4": "4242"},
        {"brand": "visa"},
        "visa 4242",
    ],
)
def test_a_card_that_does_not_look_like_one_is_not_shown(card: Any) -> None:
    assert card_of({**INTENT, "payment_method": {"id": "pm_1", "card": card}}) is None


def test_an_unfinished_intent_keeps_its_id_and_a_failed_one_its_code() -> None:
    processing = intent_outcome({**INTENT, "status": "processing"})
    assert isinstance(processing, Unknown) and processing.provider_payment_id == "pi_1"
    assert processing.report.our_id == "7" and not processing.is_provider_failure
    failed = intent_outcome(
        {
            **INTENT,
            "status": "requires_payment_method",
            "last_payment_error": {"code": "card_declined"},
        }
    )
    assert isinstance(failed, Declined) and failed.code == "card_declined"
    assert isinstance(intent_outcome({"status": "succeeded"}), Unknown)  # no id: malformed
