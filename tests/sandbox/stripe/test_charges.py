"""What may happen to a PaymentIntent, in which state (confirm, capture, cancel, update)."""

from __future__ import annotations

from typing import Any

import requests

from tests.sandbox_support import AUTH

CARD = {
    "amount": "1000",
    "currency": "eur",
    "automatic_payment_methods[enabled]": "true",
    "automatic_payment_methods[allow_redirects]": "never",
}


def _post(sandbox: Any, path: str, **form: str) -> requests.Response:
    return requests.post(
        f"{sandbox.url}/v1/payment_intents{path}", data=form, headers=AUTH, timeout=5
    )


def test_a_succeeded_intent_cannot_be_confirmed_cancelled_or_repriced(sandbox: Any) -> None:
    paid = _post(sandbox, "", **CARD, confirm="true", payment_method="pm_card_visa").json()
    for path, form in (("/confirm", {}), ("/cancel", {}), ("", {"amount": "5"})):
        answer = _post(sandbox, f"/{paid['id']}{path}", **form)
        assert answer.status_code == 400, path
        assert answer.json()["error"]["code"] == "payment_intent_unexpected_state"


def test_capture_at_most_what_was_authorized_and_only_once(sandbox: Any) -> None:
    held = _post(
        sandbox, "", **CARD, confirm="true", payment_method="pm_card_visa", capture_method="manual"
    ).json()
    too_much = _post(sandbox, f"/{held['id']}/capture", amount_to_capture="1001")
    assert too_much.status_code == 400
    done = _post(sandbox, f"/{held['id']}/capture").json()
    assert done["status"] == "succeeded" and done["amount_received"] == 1000
    assert _post(sandbox, f"/{held['id']}/capture").status_code == 400
    assert len(sandbox.charges(status="succeeded")["data"]) == 1


def test_a_decline_leaves_the_intent_open_for_another_method(sandbox: Any) -> None:
    declined = _post(
        sandbox, "", **CARD, confirm="true", payment_method="pm_card_chargeDeclined"
    ).json()["error"]["payment_intent"]
    assert declined["status"] == "requires_payment_method"
    retried = _post(sandbox, f"/{declined['id']}/confirm", payment_method="pm_card_visa").json()
    assert retried["status"] == "succeeded" and retried["last_payment_error"] is None
