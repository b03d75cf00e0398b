"""Stripe's objects as the sandbox returns them: PaymentIntent, Event, error and list
shapes with Stripe's field names, types and nesting (API version API_VERSION; the
reference is Stripe's published fixtures, tests/fixtures/stripe_objects.json)."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

API_VERSION = "2026-10-28.endive"
DOCS = "https://docs.stripe.com/error-codes"

# Stripe's test payment methods and what they do: (outcome, decline_code).
PAYMENT_METHODS: dict[str, tuple[str, str | None]] = {
    "pm_card_visa": ("succeeded", None),
    "pm_card_mastercard": ("succeeded", None),
    "pm_card_chargeDeclined": ("declined", "generic_decline"),
    "pm_card_chargeDeclinedInsufficientFunds": ("declined", "insufficient_funds"),
    "pm_card_authenticationRequired": ("requires_action", None),
    "pm_card_refundFail": ("succeeded", None),  # charges; its refunds fail later
    "pm_card_pendingRefund": ("succeeded", None),  # charges; its refunds pend first
    "pm_card_createDispute": ("succeeded", None),  # charges; then disputed
    "pm_card_createDisputeProductNotReceived": ("succeeded", None),
    "pm_card_createDisputeInquiry": ("succeeded", None),
}
CANCELABLE = (
    "requires_payment_method",
    "requires_capture",
    "requires_confirmation",
    "requires_action",
    "processing",
)


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def new_intent(params: dict[str, Any], livemode: bool = False) -> dict[str, Any]:
    """A PaymentIntent as created (before any confirmation)."""
    intent_id = new_id("pi")
    automatic = params.get("automatic_payment_methods")
    types = params.get("payment_method_types")
    return {
        "id": intent_id,
        "object": "payment_intent",
        "amount": params["amount"],
        "amount_capturable": 0,
        "amount_details": {"tip": {}},
        "amount_received": 0,
        "application": None,
        "application_fee_amount": None,
        "automatic_payment_methods": automatic if automatic or types else {"enabled": True},
        "canceled_at": None,
        "cancellation_reason": None,
        "capture_method": params.get("capture_method", "automatic_async"),
        "client_secret": f"{intent_id}_secret_{secrets.token_urlsafe(18)}",
        "confirmation_method": params.get("confirmation_method", "automatic"),
        "created": int(time.time()),
        "currency": params["currency"],
        "customer": params.get("customer"),
        "customer_account": None,
        "description": params.get("description"),
        "excluded_payment_method_types": None,
        "last_payment_error": None,
        "latest_charge": None,
        "livemode": livemode,
        "managed_payments": {"enabled": False},
        "metadata": params.get("metadata", {}),
        "next_action": None,
        "on_behalf_of": None,
        "payment_method": params.get("payment_method"),
        "payment_method_configuration_details": None,
        "payment_method_options": {},
        "payment_method_types": types or ["card"],
        "processing": None,
        "receipt_email": params.get("receipt_email"),
        "review": None,
        "setup_future_usage": None,
        "shipping": None,
        "source": None,
        "statement_descriptor": params.get("statement_descriptor"),
        "statement_descriptor_suffix": params.get("statement_descriptor_suffix"),
        "status": "requires_confirmation"
        if params.get("payment_method")
        else ("requires_payment_method"),
        "transfer_data": None,
        "transfer_group": None,
    }


def legacy_intent(row: dict[str, Any]) -> dict[str, Any]:
    """The whole object for an intent kept only as columns (an older state file)."""
    intent = new_intent(
        {
            "amount": row["amount"],
            "currency": row["currency"],
            "payment_method": row["payment_method"],
            "metadata": json.loads(row["metadata"] or "{}"),
        }
    )
    is_succeeded = row["status"] == "succeeded"
    intent.update(
        id=row["id"],
        status=row["status"],
        created=row["created"],
        amount_received=row["amount"] if is_succeeded else 0,
        last_payment_error=json.loads(row["last_payment_error"] or "null"),
        client_secret=f"{row['id']}_secret_legacy",
    )
    return intent


def card_error(decline_code: str, intent: dict[str, Any]) -> dict[str, Any]:
    return error_object(
        "card_error",
        "Your card was declined.",
        code="card_declined",
        decline_code=decline_code,
        charge=intent.get("latest_charge"),
        payment_method={"id": intent.get("payment_method"), "object": "payment_method"},
        payment_intent=intent,
        advice_code="try_again_later" if decline_code == "generic_decline" else None,
    )


def error_object(type_: str, message: str, **extra: Any) -> dict[str, Any]:
    """Stripe's error: type and message always; code, param, doc_url where it has them."""
    error: dict[str, Any] = {"type": type_, "message": message}
    error.update({k: v for k, v in extra.items() if v is not None})
    if "code" in error:
        error.setdefault("doc_url", f"{DOCS}#{str(error['code']).replace('_', '-')}")
    return error


def event_object(
    event_type: str, obj: dict[str, Any], request_id: str | None, idempotency_key: str | None
) -> dict[str, Any]:
    return {
        "id": new_id("evt"),
        "object": "event",
        "api_version": API_VERSION,
        "created": int(time.time()),
        "data": {"object": obj},
        "livemode": False,
        "pending_webhooks": 1,
        "request": {"id": request_id, "idempotency_key": idempotency_key},
        "type": event_type,
    }


def list_object(url: str, data: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    return {"object": "list", "url": url, "has_more": has_more, "data": data}


def search_object(url: str, data: list[dict[str, Any]], next_page: str | None) -> dict[str, Any]:
    return {
        "object": "search_result",
        "url": url,
        "has_more": next_page is not None,
        "next_page": next_page,
        "data": data,
    }
