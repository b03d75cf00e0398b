"""The sandbox's control API: the ledger of real money movement shows double charges; a
busy day of charges is planted with their balance for the reconciliation's benchmark."""

from __future__ import annotations

from typing import Any

import requests
import stripe


def test_double_charges_are_visible_in_the_ledger(sandbox: Any) -> None:
    body: dict[str, Any] = {
        "reference": "ref-1",
        "amount": 100,
        "currency": "EUR",
        "order_reference": 77,
        "card": "card_ok",
    }
    for _ in range(2):  # the acquirer has no keys: a blind retry charges twice
        requests.post(
            f"{sandbox.url}/acquirer/payments",
            json=body,
            headers={"X-Api-Key": "acq_test_sandbox"},
            timeout=5,
        )
    doubles = sandbox.charges()["double_charged_orders"]
    assert doubles == [{"dialect": "acquirer", "order_ref": "77", "n": 2}]


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
