"""Stripe's test cards in the sandbox: payment methods from card numbers (publishable key
or secret key), which then confirm as Stripe's test mode would."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.sandbox_support import AUTH

PUBLISHABLE = {"Authorization": "Bearer pk_test_sandbox"}
INTENT = {
    "amount": "1000",
    "currency": "eur",
    "confirm": "true",
    "automatic_payment_methods[enabled]": "true",
    "automatic_payment_methods[allow_redirects]": "never",
}


def _card(sandbox: Any, number: str, year: str = "2034", **headers: str) -> requests.Response:
    form = {
        "type": "card",
        "card[number]": number,
        "card[exp_month]": "12",
        "card[exp_year]": year,
        "card[cvc]": "123",
    }
    return requests.post(
        f"{sandbox.url}/v1/payment_methods", data=form, headers=headers or PUBLISHABLE, timeout=5
    )


@pytest.mark.parametrize(
    ("number", "status", "decline_code"),
    [
        ("4242 4242 4242 4242", "succeeded", None),
        ("4000000000000002", "requires_payment_method", "generic_decline"),
        ("4000000000009995", "requires_payment_method", "insufficient_funds"),
        ("4000002500003155", "requires_action", None),
        ("4000000000003220", "requires_action", None),
    ],
)
def test_a_test_card_confirms_as_in_stripes_test_mode(
    sandbox: Any, number: str, status: str, decline_code: str | None
) -> None:
    method = _card(sandbox, number)
    assert method.status_code == 200, method.text
    body = method.json()
    assert body["id"].startswith("pm_") and body["card"]["last4"] == number[-4:]
    assert number.replace(" ", "") not in method.text  # only the last four come back
    answer = requests.post(
        f"{sandbox.url}/v1/payment_intents",
        data={**INTENT, "payment_method": body["id"]},
        headers=AUTH,
        timeout=5,
    )
    intent = answer.json().get("error", {}).get("payment_intent") or answer.json()
    assert intent["status"] == status
    error = intent.get("last_payment_error") or {}
    assert error.get("decline_code") == decline_code


@pytest.mark.parametrize(
    ("number", "year", "code"),
    [
        ("4111111111111112", "2034", "incorrect_number"),
        ("4242424242424242", "2001", "invalid_expiry_year"),
    ],
)
def test_a_wrong_card_is_a_card_error(sandbox: Any, number: str, year: str, code: str) -> None:
    answer = _card(sandbox, number, year)
    assert answer.status_code == 402 and answer.json()["error"]["code"] == code


def test_keys_and_cors(sandbox: Any) -> None:
    assert _card(sandbox, "4242424242424242", Authorization="Bearer pk_wrong").status_code == 401
    assert _card(sandbox, "4242424242424242", **AUTH).status_code == 200  # the secret key too
    answer = _card(sandbox, "4242424242424242")
    assert answer.headers["Access-Control-Allow-Origin"] == "*"  # Stripe.js calls it cross-site
    script = requests.get(f"{sandbox.url}/js/v3", timeout=5)
    assert script.status_code == 200 and "createPaymentMethod" in script.text
    assert script.headers["Content-Type"].startswith("application/javascript")
