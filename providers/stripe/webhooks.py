"""Stripe's webhooks: `Stripe-Signature` verification; payment_intent, refund, dispute and
payout events."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from providers.events import (
    DisputeFacts,
    PayoutFacts,
    ProviderEvent,
    WebhookError,
    check_timestamp,
    event_time,
    required_field,
)
from providers.stripe.intents import intent_report
from providers.stripe.refunds import refund_report


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
    timestamp = check_timestamp(timestamps[0].strip(), now)
    expected = hmac.new(
        secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256
    ).hexdigest()
    if not any(hmac.compare_digest(expected, given) for given in signatures):
        raise WebhookError("no valid signature")


STRIPE_OUTCOMES = {
    "payment_intent.succeeded": "succeeded",
    "payment_intent.payment_failed": "failed",
    "payment_intent.canceled": "failed",
}


# A refund's events carry the refund; its status says what happened (pending: nothing yet).
# charge.refund.updated is what Stripe sends when a refund changes later (pending to
# succeeded, succeeded to failed), beside refund.updated.
REFUND_EVENTS = ("refund.created", "refund.updated", "refund.failed", "charge.refund.updated")
# Every event type the webhook endpoint must be subscribed to (docs/operations.md lists
# them; a test keeps the two the same).
# A dispute's events carry the dispute; its status says where it is (the effect follows).
DISPUTE_EVENTS = tuple(
    f"charge.dispute.{name}"
    for name in ("created", "updated", "closed", "funds_withdrawn", "funds_reinstated")
)
# A payout's events carry the payout (our money on its way to our bank).
PAYOUT_EVENTS = tuple(
    f"payout.{name}"
    for name in ("created", "updated", "paid", "failed", "canceled", "reconciliation_completed")
)
SUBSCRIBED_EVENTS = (*STRIPE_OUTCOMES, *REFUND_EVENTS, *DISPUTE_EVENTS, *PAYOUT_EVENTS)
REFUND_OUTCOMES = {"succeeded": "succeeded", "failed": "failed", "canceled": "failed"}


def parse_stripe(payload: dict[str, Any]) -> ProviderEvent:
    event_id = required_field(payload, "id", str, "")
    event_type = required_field(payload, "type", str, "")
    created = event_time(required_field(payload, "created", int, ""))
    obj = required_field(required_field(payload, "data", dict, ""), "object", dict, "data.")
    if event_type in REFUND_EVENTS:
        return _refund_event(event_id, event_type, created, obj)
    if event_type in DISPUTE_EVENTS:
        return _dispute_event(event_id, event_type, created, obj)
    if event_type in PAYOUT_EVENTS:
        return _payout_event(event_id, event_type, created, obj)
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
        required_field(obj, "id", str, "data.object.")[:255],
        intent_report(obj),
        decline if isinstance(decline, str) else None,
    )


def _refund_event(
    event_id: str, event_type: str, created: datetime, refund: dict[str, Any]
) -> ProviderEvent:
    status = refund.get("status")
    outcome = REFUND_OUTCOMES.get(status) if isinstance(status, str) else None
    reason, parent = refund.get("failure_reason"), refund.get("payment_intent")
    return ProviderEvent(
        event_id[:255],
        event_type,
        created,
        outcome,
        required_field(refund, "id", str, "data.object.")[:255],
        refund_report(refund),
        reason if isinstance(reason, str) else None,
        kind="refund",
        parent_payment_id=parent[:255] if isinstance(parent, str) else None,
    )


def _dispute_event(
    event_id: str, event_type: str, created: datetime, dispute: dict[str, Any]
) -> ProviderEvent:
    details = dispute.get("evidence_details")
    due = details.get("due_by") if isinstance(details, dict) else None
    amount, currency = dispute.get("amount"), dispute.get("currency")
    reason, parent = dispute.get("reason"), dispute.get("payment_intent")
    return ProviderEvent(
        event_id[:255],
        event_type,
        created,
        None,
        required_field(dispute, "id", str, "data.object.")[:255],
        parent_payment_id=parent[:255] if isinstance(parent, str) else None,
        kind="dispute",
        dispute=DisputeFacts(
            status=required_field(dispute, "status", str, "data.object.")[:32],
            reason=reason[:64] if isinstance(reason, str) else "",
            amount_minor=amount
            if isinstance(amount, int) and not isinstance(amount, bool)
            else None,
            currency=currency.upper()[:3] if isinstance(currency, str) else None,
            evidence_due_by=event_time(due) if isinstance(due, int) and due > 0 else None,
            is_inquiry=_case_type(dispute) == "inquiry",
        ),
    )


def _case_type(dispute: dict[str, Any]) -> str:
    """Stripe's payment_method_details.card.case_type ("chargeback", "inquiry",
    "compliance"); without it, an inquiry's warning_* status says so."""
    details = dispute.get("payment_method_details")
    card = details.get("card") if isinstance(details, dict) else None
    case = card.get("case_type") if isinstance(card, dict) else None
    if isinstance(case, str):
        return case
    status = dispute.get("status")
    return "inquiry" if isinstance(status, str) and status.startswith("warning_") else ""


def _payout_event(
    event_id: str, event_type: str, created: datetime, payout: dict[str, Any]
) -> ProviderEvent:
    amount, currency = payout.get("amount"), payout.get("currency")
    arrival, failure = payout.get("arrival_date"), payout.get("failure_code")
    return ProviderEvent(
        event_id[:255],
        event_type,
        created,
        None,
        required_field(payout, "id", str, "data.object.")[:255],
        kind="payout",
        payout=PayoutFacts(
            status=required_field(payout, "status", str, "data.object.")[:32],
            amount_minor=amount
            if isinstance(amount, int) and not isinstance(amount, bool)
            else None,
            currency=currency.upper()[:3] if isinstance(currency, str) else None,
            arrival_date=event_time(arrival)
            if isinstance(arrival, int) and not isinstance(arrival, bool) and 0 < arrival < 2**33
            else None,
            failure_code=failure[:64] if isinstance(failure, str) else None,
        ),
    )
