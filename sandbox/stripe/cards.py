"""Cards as Stripe's test mode knows them: `POST /v1/payment_methods` (with the
publishable key, as Stripe.js calls it, or the secret key) for Stripe's documented test
card numbers, and the stand-in Stripe.js (`/js/v3`) that the checkout page loads in
development and tests instead of https://js.stripe.com/v3."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, g, request

from sandbox.context import settings, store
from sandbox.stripe.idempotency import stripe_error
from sandbox.stripe.objects import PAYMENT_METHODS, new_id
from sandbox.stripe.params import ParamError, decode

bp = Blueprint("stripe_cards", __name__)
PUBLISHABLE_KEY = "pk_test_sandbox"
# Stripe's documented test cards: number -> (outcome, decline code), as the pm_card_* ids.
TEST_CARDS: dict[str, tuple[str, str | None]] = {
    "4242424242424242": ("succeeded", None),
    "5555555555554444": ("succeeded", None),
    "4000000000000002": ("declined", "generic_decline"),
    "4000000000009995": ("declined", "insufficient_funds"),
    "4000002500003155": ("requires_action", None),
    "4000000000003220": ("requires_action", None),
    # charged, then disputed (sandbox/stripe_disputes.py)
    "4000000000000259": ("succeeded", None),
    "4000000000002685": ("succeeded", None),
    "4000000000001976": ("succeeded", None),
}
BRANDS = {"4": "visa", "5": "mastercard"}
CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Headers": "Authorization, Content-Type",
    "Access-Control-Allow-Methods": "POST, OPTIONS",
}
STRIPE_JS = Path(__file__).with_name("v3.js")


# The cards behind Stripe's fixed test PaymentMethods (brand, last four digits).
TEST_METHOD_CARDS = {
    "pm_card_visa": ("visa", "4242"),
    "pm_card_mastercard": ("mastercard", "4444"),
    "pm_card_chargeDeclined": ("visa", "0002"),
    "pm_card_chargeDeclinedInsufficientFunds": ("visa", "9995"),
    "pm_card_authenticationRequired": ("visa", "3184"),
    "pm_card_refundFail": ("visa", "5126"),  # 4000000000005126: refunds fail later
    "pm_card_pendingRefund": ("visa", "7726"),  # 4000000000007726: refunds pend first
    "pm_card_createDispute": ("visa", "0259"),  # charged, then disputed (fraudulent)
    "pm_card_createDisputeProductNotReceived": ("visa", "2685"),
    "pm_card_createDisputeInquiry": ("visa", "1976"),  # charged, then an inquiry
}


def payment_method_object(method_id: str) -> dict[str, Any] | None:
    """A PaymentMethod as `expand[]=payment_method` returns it: the card's brand and last
    four digits, never its number."""
    card = TEST_METHOD_CARDS.get(method_id)
    if card is None:
        rows = store().query("SELECT brand, last4 FROM payment_methods WHERE id = ?", (method_id,))
        if not rows or rows[0]["brand"] is None:
            return None
        card = (rows[0]["brand"], rows[0]["last4"])
    return {
        "id": method_id,
        "object": "payment_method",
        "type": "card",
        "card": {
            "brand": card[0],
            "last4": card[1],
            "fingerprint": fingerprint(*card),
            "funding": "credit",
            "country": "US",
        },
    }


def fingerprint(brand: str, last4: str) -> str:
    """Stripe's card fingerprint: the same for every PaymentMethod of one card number
    in one account, so a card typed again is known again. The sandbox keeps no numbers,
    so a card is its brand and last four digits (every test card differs in them)."""
    return hashlib.sha256(f"sandbox-card:{brand}:{last4}".encode()).hexdigest()[:16]


@bp.get("/v1/payment_methods/<method_id>")
def retrieve_payment_method(method_id: str) -> Response:
    """A PaymentMethod by id, with the secret key (as Stripe's API answers it)."""
    g.stripe_request_id = new_id("req")
    given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    if given != settings().stripe_secret_key:
        return stripe_error(401, "invalid_request_error", "Invalid API Key provided.")
    found = payment_method_object(method_id)
    if found is None:
        return stripe_error(
            404,
            "invalid_request_error",
            f"No such PaymentMethod: '{method_id}'",
            code="resource_missing",
            param="payment_method",
        )
    return Response(json.dumps(found), mimetype="application/json")


def card_outcome(payment_method: str) -> tuple[str, str | None] | None:
    """What confirming with this payment method does (a pm_card_* id or a created one)."""
    if payment_method in PAYMENT_METHODS:
        return PAYMENT_METHODS[payment_method]
    rows = store().query(
        "SELECT outcome, decline_code FROM payment_methods WHERE id = ?", (payment_method,)
    )
    return (rows[0]["outcome"], rows[0]["decline_code"]) if rows else None


@bp.get("/js/v3")
def stripe_js() -> Response:
    return Response(STRIPE_JS.read_text(), mimetype="application/javascript")


@bp.route("/v1/payment_methods", methods=["OPTIONS"])
def payment_methods_preflight() -> Response:
    return Response(status=204, headers=CORS)


@bp.post("/v1/payment_methods")
def create_payment_method() -> Response:
    g.stripe_request_id = new_id("req")
    given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    if given not in (PUBLISHABLE_KEY, settings().stripe_secret_key):
        return _cors(stripe_error(401, "invalid_request_error", "Invalid API Key provided."))
    try:
        params = decode(request.form.items(multi=True), frozenset({"type", "card", "expand"}))
        method = _card_method(params)
    except ParamError as exc:
        return _cors(
            stripe_error(400, "invalid_request_error", str(exc), param=exc.param, code=exc.code)
        )
    if isinstance(method, Response):
        return _cors(method)
    return _cors(Response(json.dumps(method), mimetype="application/json"))


def _card_method(params: dict[str, Any]) -> dict[str, Any] | Response:
    if params.get("type") != "card":
        raise ParamError("Only type=card is supported by the sandbox.", "type")
    card = params.get("card")
    if not isinstance(card, dict):
        raise ParamError("Missing required param: card.", "card", "parameter_missing")
    number = str(card.get("number", "")).replace(" ", "")
    month, year = str(card.get("exp_month", "")), str(card.get("exp_year", ""))
    if number not in TEST_CARDS:
        return stripe_error(
            402,
            "card_error",
            "Your card number is incorrect.",
            code="incorrect_number",
            param="number",
        )
    if not (month.isdigit() and 1 <= int(month) <= 12):
        return stripe_error(
            402,
            "card_error",
            "Your card's expiration month is invalid.",
            code="invalid_expiry_month",
            param="exp_month",
        )
    if not year.isdigit() or int(year) % 100 + 2000 < time.gmtime().tm_year:
        return stripe_error(
            402,
            "card_error",
            "Your card's expiration year is invalid.",
            code="invalid_expiry_year",
            param="exp_year",
        )
    outcome, decline_code = TEST_CARDS[number]
    method_id = new_id("pm")
    with store().transaction() as conn:
        conn.execute(
            "INSERT INTO payment_methods (id, outcome, decline_code, created, brand, last4) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                method_id,
                outcome,
                decline_code,
                int(time.time()),
                BRANDS.get(number[0], "unknown"),
                number[-4:],
            ),
        )
    # Only the brand, the last four digits and the expiry come back: never the number.
    return {
        "id": method_id,
        "object": "payment_method",
        "type": "card",
        "card": {
            "brand": BRANDS.get(number[0], "unknown"),
            "last4": number[-4:],
            "fingerprint": fingerprint(BRANDS.get(number[0], "unknown"), number[-4:]),
            "exp_month": int(month),
            "exp_year": int(year) % 100 + 2000,
            "funding": "credit",
            "country": "US",
        },
        "billing_details": {"address": None, "email": None, "name": None, "phone": None},
        "created": int(time.time()),
        "customer": None,
        "livemode": False,
        "metadata": {},
    }


def _cors(response: Response) -> Response:
    response.headers.update(CORS)
    return response
