"""Stripe client test helpers: a client on the sandbox, a charge request."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from providers.base import ChargeRequest
from providers.stripe import StripeProvider
from tests.providers.support import POLICY


def client(sandbox: Any, **kwargs: Any) -> StripeProvider:
    return StripeProvider(
        sandbox.url, kwargs.pop("secret_key", "sk_test_sandbox"), POLICY, **kwargs
    )


def charge_request(payment_id: int = 1, **overrides: Any) -> ChargeRequest:
    fields: dict[str, Any] = {
        "payment_id": payment_id,
        "idempotency_key": str(uuid.uuid4()),
        "amount_minor": 2500,
        "currency": "EUR",
        "order_id": 10,
        "payment_method": "pm_card_visa",
        "return_url": "https://shop.example/payments/1/return",
    }
    fields.update(overrides)
    return ChargeRequest(**fields)


def sent_now(request: ChargeRequest, ago: timedelta = timedelta(0)) -> ChargeRequest:
    return ChargeRequest(**{**request.__dict__, "first_sent_at": datetime.now(UTC) - ago})
