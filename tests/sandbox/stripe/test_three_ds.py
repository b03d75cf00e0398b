"""The sandbox's 3-D Secure, judged by Stripe's SDK: server-side confirmation with a
return_url answers requires_action with a redirect; the bank's page completes or fails
the authentication and sends the customer back the way Stripe does."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
import stripe

from tests.sandbox_support import answer_challenge

RETURN_URL = "https://shop.example/payments/5/return"


def _confirm(sdk: stripe.StripeClient, payment_method: str, **extra: Any) -> Any:
    params: Any = {
        "amount": 1500,
        "currency": "eur",
        "confirm": True,
        "payment_method": payment_method,
        "allowed_payment_method_types": ["card"],
        "metadata": {"payment_id": "5"},
        **extra,
    }
    return sdk.v1.payment_intents.create(params=params)


def test_requires_action_redirects_to_the_banks_page(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    intent = _confirm(sdk, "pm_card_authenticationRequired", return_url=RETURN_URL)
    assert intent.status == "requires_action"
    assert intent.next_action.type == "redirect_to_url"
    assert intent.next_action.redirect_to_url.return_url == RETURN_URL
    back = answer_challenge(intent.next_action.redirect_to_url.url)
    query = parse_qs(urlsplit(back).query)
    assert back.startswith(RETURN_URL + "?")
    assert query["payment_intent"] == [intent.id] and query["redirect_status"] == ["succeeded"]
    done = sdk.v1.payment_intents.retrieve(intent.id)
    assert done.status == "succeeded" and done.amount_received == 1500
    assert done.next_action is None
    assert sandbox.succeeded_charges("5") == 1


def test_a_failed_authentication_returns_the_intent_to_requires_payment_method(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    intent = _confirm(sdk, "pm_card_authenticationRequired", return_url=RETURN_URL)
    back = answer_challenge(intent.next_action.redirect_to_url.url, is_completed=False)
    assert parse_qs(urlsplit(back).query)["redirect_status"] == ["failed"]
    failed = sdk.v1.payment_intents.retrieve(intent.id)
    assert failed.status == "requires_payment_method"
    error = failed.last_payment_error
    assert error is not None and error.code == "payment_intent_authentication_failure"
    assert sandbox.succeeded_charges("5") == 0
    types = [e["type"] for e in sandbox.events()]
    assert "payment_intent.requires_action" in types and "payment_intent.payment_failed" in types


def test_the_challenge_answers_once_and_only_with_the_client_secret(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    intent = _confirm(sdk, "pm_card_authenticationRequired", return_url=RETURN_URL)
    url = intent.next_action.redirect_to_url.url
    wrong = requests.post(
        url.split("?")[0], data={"client_secret": "guess", "action": "complete"}, timeout=5
    )
    assert wrong.status_code == 404
    answer_challenge(url)
    secret = parse_qs(urlsplit(url).query)["client_secret"][0]
    again = requests.post(
        url.split("?")[0], data={"client_secret": secret, "action": "fail"}, timeout=5
    )
    assert again.status_code == 200 and "answered already" in again.text
    assert sdk.v1.payment_intents.retrieve(intent.id).status == "succeeded"
    assert sandbox.succeeded_charges("5") == 1


def test_an_intent_waiting_for_authentication_can_be_cancelled(
    sdk: stripe.StripeClient,
) -> None:
    intent = _confirm(sdk, "pm_card_authenticationRequired", return_url=RETURN_URL)
    cancelled = sdk.v1.payment_intents.cancel(
        intent.id, params={"cancellation_reason": "abandoned"}
    )
    assert cancelled.status == "canceled" and cancelled.cancellation_reason == "abandoned"
    with pytest.raises(stripe.InvalidRequestError) as refused:
        sdk.v1.payment_intents.cancel(intent.id)
    assert refused.value.code == "payment_intent_unexpected_state"


def test_a_card_made_by_stripe_js_is_single_use(sdk: stripe.StripeClient, sandbox: Any) -> None:
    made = requests.post(
        f"{sandbox.url}/v1/payment_methods",
        data={
            "type": "card",
            "card[number]": "4242424242424242",
            "card[exp_month]": "12",
            "card[exp_year]": "34",
        },
        headers={"Authorization": "Bearer pk_test_sandbox"},
        timeout=5,
    ).json()["id"]
    assert _confirm(sdk, made).status == "succeeded"
    with pytest.raises(stripe.InvalidRequestError) as refused:
        _confirm(sdk, made)
    assert "may not be used again" in str(refused.value.user_message)
    assert refused.value.param == "payment_method"


def test_payment_method_types_is_refused_on_this_api_version(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    """Since 2026-09-30.endive Stripe answers 400: the client must not send it (it did)."""
    params: Any = {"amount": 500, "currency": "eur", "payment_method_types": ["card"]}
    with pytest.raises(stripe.InvalidRequestError) as refused:
        sdk.v1.payment_intents.create(params=params)
    assert refused.value.code == "payment_method_types_no_longer_supported"
    both: Any = {
        "amount": 500,
        "currency": "eur",
        "allowed_payment_method_types": ["card"],
        "automatic_payment_methods": {"enabled": True},
    }
    with pytest.raises(stripe.InvalidRequestError):
        sdk.v1.payment_intents.create(params=both)
    older = requests.post(
        f"{sandbox.url}/v1/payment_intents",
        data={"amount": "500", "currency": "eur", "payment_method_types[]": "card"},
        headers={"Authorization": "Bearer sk_test_sandbox", "Stripe-Version": "2025-01-27.acacia"},
        timeout=5,
    )
    assert older.status_code == 200 and older.json()["payment_method_types"] == ["card"]


def test_the_banks_page_fits_a_phone(sdk: stripe.StripeClient, sandbox: Any) -> None:
    intent = _confirm(sdk, "pm_card_authenticationRequired", return_url=RETURN_URL)
    page = requests.get(intent.next_action.redirect_to_url.url, timeout=5).text
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
