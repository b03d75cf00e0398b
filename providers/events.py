"""Provider webhooks: signature schemes and event parsing, per provider, pure functions.

`headers` arguments are mappings with lower-case names.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from providers.acquirer import payment_report
from providers.outcomes import Report
from providers.stripe import intent_report

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


def _check_timestamp(raw: str, now: float) -> int:
    try:
        timestamp = int(raw)
    except ValueError:
        raise WebhookError("malformed signature timestamp") from None
    if abs(now - timestamp) > SIGNATURE_TOLERANCE_S:
        raise WebhookError("signature timestamp outside the tolerance")
    return timestamp


def verify_stripe(headers: Mapping[str, str], body: bytes, secret: str, now: float) -> None:
    """Stripe's scheme: t=<unix>,v1=<hex HMAC-SHA256 of "t.body">; any v1 may match."""
    header = headers.get("stripe-signature")
    if not header:
        raise WebhookError("missing Stripe-Signature header")
    pairs = [part.split("=", 1) for part in header.split(",") if "=" in part]
    timestamps = [v for k, v in pairs if k.strip() == "t"]
    signatures = [v.strip() for k, v in pairs if k.strip() == "v1"]
    if len(timestamps) != 1 or not signatures:
        raise WebhookError("malformed Stripe-Signature header")
    timestamp = _check_timestamp(timestamps[0].strip(), now)
    expected = hmac.new(
        secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256
    ).hexdigest()
    if not any(hmac.compare_digest(expected, given) for given in signatures):
        raise WebhookError("no valid signature")


def verify_acquirer(headers: Mapping[str, str], body: bytes, secret: str, now: float) -> None:
    """The acquirer's scheme: base64 HMAC-SHA256 of "<timestamp>\\n<body>"."""
    raw_timestamp = headers.get("x-acquirer-timestamp")
    given = headers.get("x-acquirer-signature")
    if not raw_timestamp or not given:
        raise WebhookError("missing X-Acquirer-Timestamp or X-Acquirer-Signature header")
    timestamp = _check_timestamp(raw_timestamp, now)
    expected = base64.b64encode(
        hmac.new(secret.encode(), f"{timestamp}\n".encode() + body, hashlib.sha256).digest()
    ).decode()
    if not hmac.compare_digest(expected, given.strip()):
        raise WebhookError("no valid signature")


def load_json_object(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise WebhookError("body is not JSON") from None
    if not isinstance(payload, dict):
        raise WebhookError("body is not a JSON object")
    return payload


def _field(obj: Any, key: str, kind: type, where: str) -> Any:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise WebhookError(f"missing or malformed field {where}{key}")
    return value


def _created(value: int) -> datetime:
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        raise WebhookError("malformed field created") from None


STRIPE_OUTCOMES = {
    "payment_intent.succeeded": "succeeded",
    "payment_intent.payment_failed": "failed",
    "payment_intent.canceled": "failed",
}


def parse_stripe(payload: dict[str, Any]) -> ProviderEvent:
    event_id = _field(payload, "id", str, "")
    event_type = _field(payload, "type", str, "")
    created = _created(_field(payload, "created", int, ""))
    obj = _field(_field(payload, "data", dict, ""), "object", dict, "data.")
    outcome = STRIPE_OUTCOMES.get(event_type)
    if outcome is None:
        return ProviderEvent(event_id[:255], event_type[:100], created, None, None)
    error = obj.get("last_payment_error") if isinstance(obj.get("last_payment_error"), dict) else {}
    decline = error.get("decline_code") or error.get("code")
    return ProviderEvent(
        event_id[:255],
        event_type,
        created,
        outcome,
        _field(obj, "id", str, "data.object.")[:255],
        intent_report(obj),
        decline if isinstance(decline, str) else None,
    )


ACQUIRER_OUTCOMES = {"payment.approved": "succeeded", "payment.declined": "failed"}


def parse_acquirer(payload: dict[str, Any]) -> ProviderEvent:
    event_id = _field(payload, "event_id", str, "")
    event_type = _field(payload, "type", str, "")
    created = _created(_field(payload, "created", int, ""))
    outcome = ACQUIRER_OUTCOMES.get(event_type)
    if outcome is None:
        return ProviderEvent(event_id[:255], event_type[:100], created, None, None)
    payment = _field(payload, "payment", dict, "")
    _field(payment, "reference", str, "payment.")
    decline = payment.get("decline_reason")
    return ProviderEvent(
        event_id[:255],
        event_type,
        created,
        outcome,
        _field(payment, "id", str, "payment.")[:255],
        payment_report(payment),
        decline if isinstance(decline, str) else None,
    )
