"""The acquirer's webhooks: its own signature headers and payment events."""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

from providers.acquirer.client import payment_report
from providers.events import (
    ProviderEvent,
    WebhookError,
    check_timestamp,
    event_time,
    required_field,
)
from providers.outcomes import Report


def verify_acquirer(headers: Mapping[str, str], body: bytes, secret: str, now: float) -> None:
    """The acquirer's scheme: base64 HMAC-SHA256 of "<timestamp>\\n<body>"."""
    raw_timestamp = headers.get("x-acquirer-timestamp")
    given = headers.get("x-acquirer-signature")
    if not raw_timestamp or not given:
        raise WebhookError("missing X-Acquirer-Timestamp or X-Acquirer-Signature header")
    timestamp = check_timestamp(raw_timestamp, now)
    expected = base64.b64encode(
        hmac.new(secret.encode(), f"{timestamp}\n".encode() + body, hashlib.sha256).digest()
    ).decode()
    if not hmac.compare_digest(expected, given.strip()):
        raise WebhookError("no valid signature")


ACQUIRER_OUTCOMES = {"payment.approved": "succeeded", "payment.declined": "failed"}
REFUND_OUTCOMES = {"refund.approved": "succeeded", "refund.declined": "failed"}


def parse_acquirer(payload: dict[str, Any]) -> ProviderEvent:
    event_id = required_field(payload, "event_id", str, "")
    event_type = required_field(payload, "type", str, "")
    created = event_time(required_field(payload, "created", int, ""))
    if event_type in REFUND_OUTCOMES:
        refund = required_field(payload, "refund", dict, "")
        required_field(refund, "reference", str, "refund.")
        reason = refund.get("decline_reason")
        return ProviderEvent(
            event_id[:255],
            event_type,
            created,
            REFUND_OUTCOMES[event_type],
            required_field(refund, "id", str, "refund.")[:255],
            Report.of(refund.get("amount"), refund.get("currency"), reference=refund["reference"]),
            reason if isinstance(reason, str) else None,
            kind="refund",
        )
    outcome = ACQUIRER_OUTCOMES.get(event_type)
    if outcome is None:
        return ProviderEvent(event_id[:255], event_type[:100], created, None, None)
    payment = required_field(payload, "payment", dict, "")
    required_field(payment, "reference", str, "payment.")
    decline = payment.get("decline_reason")
    return ProviderEvent(
        event_id[:255],
        event_type,
        created,
        outcome,
        required_field(payment, "id", str, "payment.")[:255],
        payment_report(payment),
        decline if isinstance(decline, str) else None,
    )
