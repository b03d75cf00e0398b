"""The sandbox's control API: the ledger of real money movement shows double charges."""

from __future__ import annotations

from typing import Any

import requests


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
