"""What every provider's webhooks share: the event as the payment needs it, the error a
bad delivery gets, and the parsing helpers each provider's scheme (providers/<name>/
webhooks.py) uses. Pure functions.

`headers` arguments are mappings with lower-case names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from providers.outcomes import Report

SIGNATURE_TOLERANCE_S = 300  # Stripe's default: replays older (or newer) than 5 min are refused


class WebhookError(ValueError):
    """The request is not a valid provider event; the message is a short reason for the sender."""


@dataclass(frozen=True)
class ProviderEvent:
    """A provider event reduced to what the payment needs."""

    event_id: str
    event_type: str
    created_at: datetime
    outcome: str | None  # "succeeded" | "failed" | None (no effect on payments)
    provider_payment_id: str | None
    # Which payment, for how much, as the event says (our id or reference, amount, currency).
    report: Report = field(default_factory=Report)
    decline_code: str | None = None
    # A refund's event: provider_payment_id is then the provider's refund id, and the
    # report echoes our refund (Stripe: metadata.refund_id; the acquirer: its reference).
    is_refund: bool = False


def check_timestamp(raw: str, now: float) -> int:
    try:
        timestamp = int(raw)
    except ValueError:
        raise WebhookError("malformed signature timestamp") from None
    if abs(now - timestamp) > SIGNATURE_TOLERANCE_S:
        raise WebhookError("signature timestamp outside the tolerance")
    return timestamp


def load_json_object(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise WebhookError("body is not JSON") from None
    if not isinstance(payload, dict):
        raise WebhookError("body is not a JSON object")
    return payload


def required_field(obj: Any, key: str, kind: type, where: str) -> Any:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise WebhookError(f"missing or malformed field {where}{key}")
    return value


def event_time(value: int) -> datetime:
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        raise WebhookError("malformed field created") from None
