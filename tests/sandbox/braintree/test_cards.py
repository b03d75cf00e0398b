"""Card entry as Braintree's client SDK does it: the shop's server generates a client
token with Braintree's SDK, the browser sends the card to the client API with it and
gets a nonce, the server charges the nonce; the card number never reaches the shop, and
a nonce is used once."""

from __future__ import annotations

import base64
import json
from typing import Any

import braintree
import requests


def _tokenized(sandbox: Any, token: str, number: str) -> requests.Response:
    """What the browser's braintree-web sends (the fingerprint, the card)."""
    fingerprint = json.loads(base64.b64decode(token))["authorizationFingerprint"]
    return requests.post(
        f"{sandbox.url}/merchants/sandbox_merchant/client_api/v1/payment_methods/credit_cards",
        json={
            "authorizationFingerprint": fingerprint,
            "creditCard": {"number": number, "expirationDate": "12/30", "cvv": "123"},
        },
        timeout=5,
    )


def test_a_card_tokenized_in_the_browser_is_charged_by_its_nonce_once(
    braintree_sdk: braintree.BraintreeGateway, sandbox: Any
) -> None:
    token = braintree_sdk.client_token.generate()
    answer = _tokenized(sandbox, token, "4111 1111 1111 1111")
    assert answer.status_code == 201
    assert answer.headers["Access-Control-Allow-Origin"] == "*"
    [card] = answer.json()["creditCards"]
    assert card["nonce"].startswith("tokencc_") and card["details"]["lastFour"] == "1111"
    sale = {"amount": "11.00", "payment_method_nonce": card["nonce"]}
    charged = braintree_sdk.transaction.sale(sale)
    assert charged.is_success and charged.transaction.credit_card_details.last_4 == "1111"
    again = braintree_sdk.transaction.sale(sale)
    assert not again.is_success
    assert [e.code for e in again.errors.deep_errors] == ["93107"]  # used once


def test_a_declining_test_card_declines_and_an_unknown_number_is_refused(
    braintree_sdk: braintree.BraintreeGateway, sandbox: Any
) -> None:
    token = braintree_sdk.client_token.generate()
    nonce = _tokenized(sandbox, token, "4000111111111115").json()["creditCards"][0]["nonce"]
    declined = braintree_sdk.transaction.sale({"amount": "11.00", "payment_method_nonce": nonce})
    assert declined.transaction.status == "processor_declined"
    assert _tokenized(sandbox, token, "4242424242424241").status_code == 422


def test_the_client_api_needs_the_client_tokens_authorization(sandbox: Any) -> None:
    forged = base64.b64encode(json.dumps({"authorizationFingerprint": "0" * 64}).encode())
    assert _tokenized(sandbox, forged.decode(), "4111111111111111").status_code == 401
