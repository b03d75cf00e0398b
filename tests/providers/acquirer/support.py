"""Acquirer client test helpers: a client on the sandbox, a charge request."""

from __future__ import annotations

import uuid
from typing import Any

from providers.acquirer import AcquirerProvider
from providers.base import ChargeRequest
from providers.http import HttpPolicy

POLICY = HttpPolicy(
    connect_timeout_s=0.5,
    read_timeout_s=1.0,
    call_budget_s=4.0,
    max_retries=2,
    retry_after_cap_s=1,
    backoff_factor_s=0.05,
    backoff_jitter_s=0.05,
)


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
