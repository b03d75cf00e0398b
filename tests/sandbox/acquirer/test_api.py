"""The acquirer dialect: its key, its webhook scheme."""

from __future__ import annotations

from typing import Any

import requests

from sandbox.events import acquirer_signature
from tests.sandbox_support import wait_for


def test_acquirer_webhooks_use_their_own_scheme(sandbox: Any, webhook_receiver: Any) -> None:
    requests.post(
        f"{sandbox.url}/acquirer/payments",
        json={"reference": "r", "amount": 5, "currency": "EUR", "card": "card_ok"},
        headers={"X-Api-Key": "acq_test_sandbox"},
        timeout=5,
    )
    wait_for(lambda: webhook_receiver.deliveries)
    delivery = webhook_receiver.deliveries[0]
    assert delivery.path == "/hooks/acquirer"
    timestamp = int(delivery.headers["X-Acquirer-Timestamp"])
    assert delivery.headers["X-Acquirer-Signature"] == acquirer_signature(
        "acqwh_sandbox", delivery.body, timestamp
    )
