"""Acquirer client test helpers: a client on the sandbox, a charge request."""

from __future__ import annotations

import uuid
from typing import Any

from providers.acquirer import AcquirerProvider
from providers.base import ChargeRequest
from tests.providers.support import POLICY


def client(sandbox: Any) -> AcquirerProvider:
    return AcquirerProvider(f"{sandbox.url}/acquirer", "acq_test_sandbox", POLICY)


def charge_request(**overrides: Any) -> ChargeRequest:
    fields: dict[str, Any] = {
        "payment_id": 5,
        "idempotency_key": str(uuid.uuid4()),
        "amount_minor": 700,
        "currency": "EUR",
        "order_id": 3,
        "payment_method": "card_ok",
    }
    fields.update(overrides)
    return ChargeRequest(**fields)
