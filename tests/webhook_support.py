"""Webhook deliveries as a provider sends them (a signed Stripe event), and a recorded
event as the webhook endpoint leaves it, for tests that apply one directly."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from flask.testing import FlaskClient

from extensions import db
from models import ProcessedWebhook, WebhookState
from models.types import utcnow
from providers.events import ProviderEvent
from sandbox.events import stripe_signature
from services.webhooks.events import RECEIVED


def recorded(event: ProviderEvent, provider: str = "stripe") -> ProcessedWebhook:
    """The event recorded and waiting, as the endpoint leaves it (flushed, not committed)."""
    record = ProcessedWebhook(
        provider=provider,
        event_id=event.event_id,
        event_type=event.event_type,
        payload={},
        event_created_at=event.created_at,
        received_at=utcnow(),
        state=WebhookState.PENDING,
        note=RECEIVED,
    )
    db.session.add(record)
    db.session.flush()
    return record


WEBHOOK_SECRET = "whsec_sandbox"  # the sandbox's Stripe signing secret (development)


def stripe_event(
    payment_id: int | None,
    event_type: str = "payment_intent.succeeded",
    created: int | None = None,
    intent_id: str = "pi_test",
    amount: int = 1000,  # what committed_payment() creates for an order; 700 for a top-up
    currency: str = "eur",
    **extra: Any,
) -> dict:
    metadata = {"payment_id": str(payment_id)} if payment_id is not None else {}
    return {
        "id": extra.pop("event_id", f"evt_{uuid.uuid4().hex[:16]}"),
        "object": "event",
        "type": event_type,
        "created": created or int(time.time()),
        "data": {
            "object": {
                "id": intent_id,
                "object": "payment_intent",
                "status": "succeeded",
                "amount": amount,
                "currency": currency,
                "metadata": metadata,
                **extra,
            }
        },
    }


def signed_post(
    client: FlaskClient,
    payload: dict | bytes,
    *,
    secret: str = WEBHOOK_SECRET,
    timestamp: int | None = None,
    provider: str = "stripe",
) -> Any:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    t = timestamp if timestamp is not None else int(time.time())
    return client.post(
        f"/webhooks/{provider}",
        data=body,
        content_type="application/json",
        headers={"Stripe-Signature": stripe_signature(secret, body, t)},
    )
