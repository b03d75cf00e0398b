"""What happens to a PaymentIntent: confirm (charge or authorize), cancel, capture,
update. Each runs in the caller's transaction, saves the intent, writes the money
ledger (`charges`: what a bank statement would show) and records Stripe's events."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any
from urllib.parse import urlencode

from flask import Response, g, request

from sandbox.context import store
from sandbox.events import create_event
from sandbox.stripe import balance
from sandbox.stripe import params as params_of
from sandbox.stripe.cards import card_outcome, payment_method_object
from sandbox.stripe.disputes import open_for
from sandbox.stripe.idempotency import stripe_error
from sandbox.stripe.objects import CANCELABLE, PAYMENT_METHODS, card_error, new_id
from sandbox.stripe.params import ParamError

Result = tuple[dict[str, Any], Response | None]
SINGLE_USE_MESSAGE = (
    "The provided PaymentMethod was previously used with a PaymentIntent without Customer "
    "attachment, shared with a connected account without Customer attachment, or was "
    "detached from a Customer. It may not be used again. To use a PaymentMethod multiple "
    "times, you must attach it to a Customer first."
)
AUTHENTICATION_FAILURE_MESSAGE = (
    "The provided PaymentMethod has failed authentication. You can provide "
    "payment_method_data or a new PaymentMethod to attempt to fulfill this PaymentIntent "
    "again."
)
RETURN_URL_MESSAGE = (
    "This PaymentIntent is configured to accept payment methods enabled in your "
    "Dashboard. Because some of these payment methods might redirect your customer off "
    "of your page, you must provide a `return_url`. If you don't want to accept "
    "redirect-based payment methods, set `automatic_payment_methods[enabled]` to `true` "
    "and `automatic_payment_methods[allow_redirects]` to `never` when creating Setup "
    "Intents and Payment Intents."
)


def _save(conn: sqlite3.Connection, intent: dict[str, Any]) -> None:
    conn.execute(
        "UPDATE payment_intents SET status = ?, payment_method = ?, metadata = ?, "
        "last_payment_error = ?, body = ? WHERE id = ?",
        (
            intent["status"],
            intent["payment_method"],
            json.dumps(intent["metadata"]),
            json.dumps(intent["last_payment_error"]) if intent["last_payment_error"] else None,
            json.dumps(intent),
            intent["id"],
        ),
    )


def _event(conn: sqlite3.Connection, event_type: str, intent: dict[str, Any]) -> None:
    create_event(
        store(),
        conn,
        "stripe",
        event_type,
        intent,
        request_info=(g.get("stripe_request_id"), request.headers.get("Idempotency-Key")),
    )


def _ledger(conn: sqlite3.Connection, intent: dict[str, Any], amount: int, status: str) -> None:
    metadata = intent["metadata"]
    store().record_charge(
        conn,
        "stripe",
        intent["id"],
        metadata.get("payment_id"),
        metadata.get("order_id"),
        amount,
        intent["currency"],
        status,
    )


def _succeeded(conn: sqlite3.Connection, intent: dict[str, Any]) -> None:
    """Stripe's event of a charge that went through; a dispute test card's dispute."""
    amount = int(intent["amount_received"] or intent["amount"])
    fee = balance.card_fee(amount)
    balance.record(conn, "charge", intent["latest_charge"], amount, intent["currency"], fee=fee)
    _event(conn, "payment_intent.succeeded", intent)
    open_for(conn, intent)


def _unexpected_state(intent: dict[str, Any], action: str) -> Response:
    return stripe_error(
        400,
        "invalid_request_error",
        f"You cannot {action} this PaymentIntent because it has a status of {intent['status']}.",
        code="payment_intent_unexpected_state",
        payment_intent=intent,
    )


def confirm(conn: sqlite3.Connection, intent: dict[str, Any], form: dict[str, Any]) -> Result:
    """Charge (or, with capture_method=manual, authorize) the intent's payment method."""
    if intent["status"] not in ("requires_payment_method", "requires_confirmation"):
        return intent, _unexpected_state(intent, "confirm")
    method = form.get("payment_method") or intent["payment_method"]
    if not method:
        raise ParamError(
            "You cannot confirm this PaymentIntent because it's missing a payment method.",
            "payment_method",
            "payment_intent_unexpected_state",
        )
    known = card_outcome(method)
    if known is None:
        raise ParamError(f"No such PaymentMethod: '{method}'", "payment_method", "resource_missing")
    if _is_used_elsewhere(conn, method, intent["id"]):
        raise ParamError(SINGLE_USE_MESSAGE, "payment_method")
    automatic = intent["automatic_payment_methods"] or {}
    if (
        automatic.get("enabled")
        and automatic.get("allow_redirects") != "never"
        and not form.get("return_url")
    ):
        raise ParamError(RETURN_URL_MESSAGE, "return_url", "parameter_missing")
    intent["payment_method"] = method
    outcome, decline_code = known
    if outcome == "requires_action":
        intent["status"] = "requires_action"
        intent["next_action"] = _next_action(intent, form.get("return_url"))
        _save(conn, intent)
        _event(conn, "payment_intent.requires_action", intent)
        return intent, None
    intent["latest_charge"] = new_id("ch")
    if outcome == "declined":
        error = card_error(decline_code or "generic_decline", {**intent})
        error.pop("payment_intent", None)
        intent.update(status="requires_payment_method", last_payment_error=error)
        _save(conn, intent)
        _ledger(conn, intent, intent["amount"], "failed")
        _event(conn, "payment_intent.payment_failed", intent)
        details = card_error(decline_code or "generic_decline", intent)
        # Stripe's card error carries the whole PaymentMethod (its card's fingerprint too).
        details["payment_method"] = payment_method_object(method) or details["payment_method"]
        response = stripe_error(402, details.pop("type"), details.pop("message"), **details)
        return intent, response
    intent["last_payment_error"] = None
    if intent["capture_method"] == "manual":
        intent.update(status="requires_capture", amount_capturable=intent["amount"])
        _save(conn, intent)
        _event(conn, "payment_intent.amount_capturable_updated", intent)
        return intent, None
    intent.update(status="succeeded", amount_received=intent["amount"])
    _save(conn, intent)
    _ledger(conn, intent, intent["amount"], "succeeded")
    _succeeded(conn, intent)
    return intent, None


def _next_action(intent: dict[str, Any], return_url: object) -> dict[str, Any]:
    """With a return_url the customer is redirected to the bank (our challenge page);
    without one, Stripe.js would handle it in the page (use_stripe_sdk)."""
    if not isinstance(return_url, str) or not return_url:
        return {
            "type": "use_stripe_sdk",
            "use_stripe_sdk": {"type": "three_d_secure_redirect", "stripe_js": ""},
        }
    url = f"{request.host_url}3d_secure/authenticate/{intent['id']}?" + urlencode(
        {"client_secret": intent["client_secret"]}
    )
    return {"type": "redirect_to_url", "redirect_to_url": {"url": url, "return_url": return_url}}


def _is_used_elsewhere(conn: sqlite3.Connection, method: str, intent_id: str) -> bool:
    """A PaymentMethod made by Stripe.js is single-use unless attached to a Customer (the
    sandbox has none): a second PaymentIntent cannot use it. The pm_card_* ids can."""
    if method in PAYMENT_METHODS:
        return False
    return bool(
        conn.execute(
            "SELECT 1 FROM payment_intents WHERE payment_method = ? AND id != ? LIMIT 1",
            (method, intent_id),
        ).fetchone()
    )


def authenticate(conn: sqlite3.Connection, intent: dict[str, Any], is_completed: bool) -> None:
    """The customer finished the bank's challenge: the intent succeeds (and is charged)
    or returns to requires_payment_method with an authentication failure."""
    if intent["status"] != "requires_action":
        return  # answered already (a second click, a reload): nothing changes
    intent["next_action"] = None
    if is_completed:
        intent.update(
            status="succeeded", amount_received=intent["amount"], latest_charge=new_id("ch")
        )
        _save(conn, intent)
        _ledger(conn, intent, intent["amount"], "succeeded")
        _succeeded(conn, intent)
        return
    intent.update(
        status="requires_payment_method",
        last_payment_error={
            "type": "invalid_request_error",
            "code": "payment_intent_authentication_failure",
            "message": AUTHENTICATION_FAILURE_MESSAGE,
            "doc_url": "https://stripe.com/docs/error-codes/payment-intent-authentication-failure",
            "payment_method": {"id": intent["payment_method"], "object": "payment_method"},
        },
    )
    _save(conn, intent)
    _event(conn, "payment_intent.payment_failed", intent)


def cancel(conn: sqlite3.Connection, intent: dict[str, Any], form: dict[str, Any]) -> Result:
    if intent["status"] not in CANCELABLE:
        return intent, _unexpected_state(intent, "cancel")
    reason = params_of.choice(form, "cancellation_reason", params_of.CANCELLATION_REASONS)
    intent.update(
        status="canceled",
        canceled_at=int(time.time()),
        cancellation_reason=reason,
        amount_capturable=0,
        next_action=None,
    )
    _save(conn, intent)
    _event(conn, "payment_intent.canceled", intent)
    return intent, None


def capture(conn: sqlite3.Connection, intent: dict[str, Any], form: dict[str, Any]) -> Result:
    if intent["status"] != "requires_capture":
        return intent, _unexpected_state(intent, "capture")
    amount = params_of.integer(form, "amount_to_capture")
    amount = intent["amount_capturable"] if amount is None else amount
    if not 1 <= amount <= intent["amount_capturable"]:
        raise ParamError(
            "The amount to capture must be at most the amount capturable.",
            "amount_to_capture",
            "amount_too_large",
        )
    intent.update(status="succeeded", amount_received=amount, amount_capturable=0)
    if form.get("metadata"):
        intent["metadata"].update(params_of.metadata(form))
    _save(conn, intent)
    _ledger(conn, intent, amount, "succeeded")
    _succeeded(conn, intent)
    return intent, None


def update(conn: sqlite3.Connection, intent: dict[str, Any], form: dict[str, Any]) -> Result:
    """Metadata merges (an empty value deletes the key); amount, currency and payment
    method change only before confirmation."""
    before_confirmation = intent["status"] in ("requires_payment_method", "requires_confirmation")
    if any(name in form for name in ("amount", "currency", "payment_method")):
        if not before_confirmation:
            return intent, _unexpected_state(intent, "update the amount of")
        if "amount" in form:
            intent["amount"] = params_of.integer(form, "amount")
        if isinstance(form.get("currency"), str):
            intent["currency"] = form["currency"].lower()
        if isinstance(form.get("payment_method"), str):
            intent["payment_method"] = form["payment_method"]
            intent["status"] = "requires_confirmation"
    for key, value in params_of.metadata(form).items():
        if value == "":
            intent["metadata"].pop(key, None)
        else:
            intent["metadata"][key] = value
    for name in ("description", "receipt_email", "statement_descriptor"):
        if isinstance(form.get(name), str):
            intent[name] = form[name] or None
    _save(conn, intent)
    return intent, None
