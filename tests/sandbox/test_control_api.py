"""The sandbox's control API: the ledger of real money movement shows double charges; a
busy day of charges is planted with their balance for the reconciliation's benchmark."""

from __future__ import annotations

from typing import Any

import braintree
import requests
import stripe


def test_double_charges_are_visible_in_the_ledger(
    sandbox: Any, braintree_sdk: braintree.BraintreeGateway
) -> None:
    # Braintree has no keys: a blind retry with another card of the customer's charges
    # twice (duplicate checking looks at the card and amount only).
    for nonce in ("fake-valid-visa-nonce", "fake-valid-mastercard-nonce"):
        result = braintree_sdk.transaction.sale(
            {"amount": "1.00", "payment_method_nonce": nonce, "order_id": "ref-1"}
        )
        assert result.is_success
    doubles = sandbox.charges()["double_charged_payments"]
    assert doubles == [{"dialect": "braintree", "payment_ref": "ref-1", "n": 2}]


def test_a_busy_day_of_charges_is_planted_with_their_balance(
    sandbox: Any, sdk: stripe.StripeClient
) -> None:
    url = f"{sandbox.url}/_sandbox/stripe/charges"
    planted = requests.post(url, json={"count": 3, "amount": 2000}, timeout=10)
    assert planted.status_code == 201
    ids = planted.json()["data"]
    intent = sdk.v1.payment_intents.retrieve(ids[1])
    assert (intent.status, intent.amount_received) == ("succeeded", 2000)
    listed = sdk.v1.balance_transactions.list(params={"expand": ["data.source"]}).data
    sources: list[Any] = [t.source for t in listed]
    assert sorted(source.payment_intent for source in sources) == sorted(ids)
    assert {(t.amount, t.fee) for t in listed} == {(2000, 55)}
    for bad in ({"count": 0}, {"count": 100_001}, {"count": 2, "amount": 10}, {"count": "2"}):
        assert requests.post(url, json=bad, timeout=10).status_code == 400
