"""Card entry, as Braintree's client SDK (braintree-web) does it, so that no card data
reaches the shop: the shop's server asks for a client token (`client_token.generate`,
base64 JSON with an `authorizationFingerprint`), the browser sends the card to the
client API with it (`POST /merchants/{id}/client_api/v1/payment_methods/credit_cards`)
and gets a single-use nonce (`tokencc_...`) that the shop's server charges. Braintree's
test card numbers decide the sale as their test nonces do; a nonce is used once."""

from __future__ import annotations

import base64
import hmac
import json
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, jsonify, request

from sandbox.braintree import nonces, testing
from sandbox.braintree.gateway import answer, bp
from sandbox.context import settings, store

client_bp = Blueprint("braintree_client", __name__)  # the browser's: no API keys
BRAINTREE_WEB = Path(__file__).with_name("client.js")
CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Headers": "Content-Type",
    "Access-Control-Allow-Methods": "POST, OPTIONS",
}


def _fingerprint() -> str:
    """The client tokens' authorization: the merchant's, signed with its private key."""
    config = settings()
    digest = hmac.new(
        config.braintree_private_key.encode(), config.braintree_merchant_id.encode(), "sha256"
    )
    return digest.hexdigest()


@bp.post("/merchants/<merchant_id>/client_token")
def client_token(merchant_id: str) -> Response:
    token = {
        "version": 2,
        "authorizationFingerprint": _fingerprint(),
        "merchantId": merchant_id,
        "clientApiUrl": f"{request.host_url}merchants/{merchant_id}/client_api",
        "environment": "sandbox",
    }
    value = base64.b64encode(json.dumps(token).encode()).decode()
    return answer("client_token", {"value": value}, 201)


@client_bp.route(
    "/merchants/<merchant_id>/client_api/v1/payment_methods/credit_cards",
    methods=["OPTIONS"],
)
def tokenize_preflight(merchant_id: str) -> Response:
    return Response(status=204, headers=CORS)


@client_bp.post("/merchants/<merchant_id>/client_api/v1/payment_methods/credit_cards")
def tokenize(merchant_id: str) -> Response:
    body = request.get_json(silent=True)
    body = body if isinstance(body, dict) else {}
    if not _is_authorized(body):
        return _client_error(401, "Authorization fingerprint is invalid")
    given_card = body.get("creditCard")
    card: dict[str, Any] = given_card if isinstance(given_card, dict) else {}
    number = "".join(str(card.get("number") or "").split())
    found = testing.card_of_number(number)
    if found is None:
        return _client_error(422, "Credit card number is not an accepted test number")
    with store().transaction() as conn:
        nonce = nonces.mint(conn, number)
    details = {"lastFour": number[-4:], "cardType": found.card_type, "bin": number[:6]}
    payload = {"creditCards": [{"nonce": nonce, "type": "CreditCard", "details": details}]}
    return _cors(jsonify(payload), 201)


def _is_authorized(body: dict[str, Any]) -> bool:
    """A client token's fingerprint, or the merchant's tokenization key (braintree-web
    sends it as `tokenizationKey` with every client API request it authorizes)."""
    fingerprint, key = body.get("authorizationFingerprint"), body.get("tokenizationKey")
    if isinstance(fingerprint, str):
        return hmac.compare_digest(fingerprint, _fingerprint())
    return isinstance(key, str) and hmac.compare_digest(key, settings().braintree_tokenization_key)


@client_bp.get("/braintree-web/client.js")
def braintree_web() -> Response:
    """The stand-in of braintree-web (client and hosted fields) the payment pages load in
    development and tests instead of https://js.braintreegateway.com."""
    return Response(BRAINTREE_WEB.read_text(), mimetype="application/javascript")


def _client_error(status: int, message: str) -> Response:
    return _cors(jsonify(error={"message": message}), status)


def _cors(response: Response, status: int) -> Response:
    response.status_code = status
    response.headers.update(CORS)
    return response
