"""What a PaymentIntent says, read from untrusted JSON: the outcome it stands for, what
it was for, where its customer authenticates, and the card's brand and last four digits."""

from __future__ import annotations

from typing import Any

from providers.outcomes import (
    ActionRequired,
    CardShown,
    Declined,
    Outcome,
    Report,
    Succeeded,
    Unknown,
)


def intent_report(intent: dict[str, Any]) -> Report:
    """What a PaymentIntent says it is for; a succeeded one also says what it received."""
    is_succeeded = intent.get("status") == "succeeded"
    return Report.of(
        intent.get("amount"),
        intent.get("currency"),
        our_id=payment_ref(intent),
        received=intent.get("amount_received") if is_succeeded else None,
    )


def redirect_url(intent: dict[str, Any]) -> str | None:
    """Where the customer authenticates: next_action.redirect_to_url.url (https, or any
    URL of the sandbox in development: the checks on it are the caller's)."""
    action = intent.get("next_action")
    if not isinstance(action, dict) or action.get("type") != "redirect_to_url":
        return None
    target = action.get("redirect_to_url")
    url = target.get("url") if isinstance(target, dict) else None
    return url if isinstance(url, str) and url.startswith(("https://", "http://")) else None


def intent_outcome(intent: dict[str, Any]) -> Outcome:
    intent_id = intent.get("id")
    status = intent.get("status")
    if not isinstance(intent_id, str):
        return Unknown("malformed response: no payment_intent id")
    if status == "succeeded":
        return Succeeded(intent_id, intent_report(intent), card_of(intent))
    if status in ("requires_payment_method", "canceled"):
        error = intent.get("last_payment_error")
        if not isinstance(error, dict):
            error = {}
        return Declined(
            str(error.get("decline_code") or error.get("code") or status),
            str(error.get("message", "")),
            intent_id,
            intent_report(intent),
        )
    if status == "requires_action":
        return ActionRequired(intent_id, redirect_url(intent), intent_report(intent))
    # processing, requires_confirmation, requires_capture: not final; the id is kept.
    return Unknown(
        f"payment_intent {intent_id} is {status}",
        is_provider_failure=False,
        provider_payment_id=intent_id,
        report=intent_report(intent),
    )


def card_of(intent: dict[str, Any]) -> CardShown | None:
    """The card of an intent whose payment_method was expanded (else nothing to say)."""
    method = intent.get("payment_method")
    card = method.get("card") if isinstance(method, dict) else None
    return CardShown.of(card.get("brand"), card.get("last4")) if isinstance(card, dict) else None


def payment_ref(intent: dict[str, Any]) -> str | None:
    metadata = intent.get("metadata")
    ref = metadata.get("payment_id") if isinstance(metadata, dict) else None
    return ref if isinstance(ref, str) else None
