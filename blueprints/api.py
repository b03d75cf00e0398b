"""The JSON API for programmatic clients: the same services as the pages, bearer-token auth."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from flask import Blueprint, g, jsonify, request
from flask.typing import ResponseReturnValue

from blueprints.api_contract import document
from extensions import csrf, db
from models.types import parse_uuid
from services.accounts.customers import customer_for_token, hash_token
from services.payments.cards import card_entry
from services.payments.checkout import (
    create_order,
    owned_order,
    owned_payment,
    parse_idempotency_key,
    parse_items,
    start_order_payment,
    start_topup_payment,
)
from services.payments.intake import NewPayment, pay_order_by_token
from services.payments.presenters import movement_json, new_order_json, order_json, payment_json
from services.platform.errors import ClientError
from services.wallet import ledger
from services.wallet.payments import pay_order_from_wallet
from services.wallet.reads import wallets_of
from settings import settings

bp = Blueprint("api", __name__, url_prefix="/api")
csrf.exempt(bp)  # bearer tokens, not cookies: no cross-site request can carry one


def api_error(status: int, code: str, message: str, **details: Any) -> ResponseReturnValue:
    return jsonify(error={"code": code, "message": message, **details}), status


def _bearer_token() -> str:
    header = request.headers.get("Authorization", "")
    return header[7:].strip() if header.startswith("Bearer ") else ""


def token_required(view: Callable[..., ResponseReturnValue]) -> Callable[..., ResponseReturnValue]:
    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> ResponseReturnValue:
        token = _bearer_token()
        customer = customer_for_token(token) if token else None
        if customer is None:
            return api_error(401, "unauthorized", "send 'Authorization: Bearer <token>'")
        g.customer = customer
        return view(*args, **kwargs)

    return wrapper


@bp.errorhandler(ClientError)
def client_error(exc: ClientError) -> ResponseReturnValue:
    db.session.rollback()
    body = jsonify(error={"code": exc.code, "message": str(exc), **exc.details})
    return body, exc.status, exc.headers()


def _json_body(*, is_optional: bool = False) -> dict[str, Any]:
    body = request.get_json(silent=True)
    if body is None and is_optional and not request.get_data(cache=True):
        return {}
    if not isinstance(body, dict):
        raise ClientError("the body must be a JSON object", code="invalid_json")
    return body


@bp.get("/openapi.json")
def openapi() -> ResponseReturnValue:
    """The API's contract (OpenAPI 3.1); public, like any published API description."""
    return jsonify(document(settings().money.currencies, card_entry().token_re))


@bp.post("/orders")
@token_required
def post_order() -> ResponseReturnValue:
    order = create_order(g.customer, parse_items(_json_body().get("items")))
    return jsonify(new_order_json(order)), 201


@bp.get("/orders/<id:order_id>")
@token_required
def get_order(order_id: int) -> ResponseReturnValue:
    return jsonify(order_json(owned_order(g.customer, order_id)))


@bp.post("/orders/<id:order_id>/payments")
def post_payment(order_id: int) -> ResponseReturnValue:
    new = _lean_payment(order_id)  # the common case in one statement (services/payments/intake.py)
    if new is not None:
        body = payment_json(new, refunds=[], transitions=[new.transition])
        return jsonify(body), 201
    return _post_payment(order_id)


def _lean_payment(order_id: int) -> NewPayment | None:
    token, raw_key = _bearer_token(), request.headers.get("Idempotency-Key", "")
    body = request.get_json(silent=True)
    if not token or not isinstance(body, dict):
        return None
    try:
        key = parse_uuid(raw_key)
    except ValueError:
        return None
    card = body.get("payment_method")
    return pay_order_by_token(hash_token(token), order_id, key, card, request.remote_addr)


@token_required
def _post_payment(order_id: int) -> ResponseReturnValue:
    """Every other case (repeats, errors): decided and answered by the ORM path."""
    key = parse_idempotency_key(request.headers.get("Idempotency-Key"))
    card = _json_body(is_optional=True).get("payment_method")
    payment, is_new = start_order_payment(g.customer, order_id, key, card, request.remote_addr)
    return jsonify(payment_json(payment)), 201 if is_new else 200


@bp.get("/payments/<id:payment_id>")
@token_required
def get_payment(payment_id: int) -> ResponseReturnValue:
    payment = owned_payment(g.customer, payment_id)
    return jsonify(payment_json(payment))


@bp.get("/wallet")
@token_required
def get_wallet() -> ResponseReturnValue:
    wallets = wallets_of(g.customer.id)
    return jsonify(
        wallets=[
            {"id": w.id, "currency": w.currency, "balance_minor": w.balance_minor} for w in wallets
        ]
    )


@bp.post("/wallet/debits")
@token_required
def post_debit() -> ResponseReturnValue:
    operation_id = str(parse_idempotency_key(request.headers.get("Idempotency-Key")))
    body = _json_body()
    currency = body.get("currency")
    if not isinstance(currency, str):
        raise ClientError("currency must be an ISO 4217 code", code="invalid_currency", status=422)
    reference = body.get("reference", "")
    if not isinstance(reference, str):
        raise ClientError("reference must be a string", code="invalid_reference", status=422)
    movement = ledger.debit(
        ledger.wallet_of(g.customer, currency),
        body.get("amount_minor"),
        operation_id,
        memo=reference[:200],
    )
    return jsonify(movement_json(movement)), 200 if movement.is_replay else 201


@bp.post("/orders/<id:order_id>/wallet-payments")
@token_required
def post_wallet_payment(order_id: int) -> ResponseReturnValue:
    """Pay an open order from the wallet; the Idempotency-Key is the debit's operation id."""
    operation_id = str(parse_idempotency_key(request.headers.get("Idempotency-Key")))
    movement = pay_order_from_wallet(g.customer, order_id, operation_id)
    return jsonify(movement_json(movement)), 200 if movement.is_replay else 201


@bp.post("/wallet/topups")
@token_required
def post_topup() -> ResponseReturnValue:
    """Top a wallet up through the provider: a payment like an order's, same key rules."""
    key = parse_idempotency_key(request.headers.get("Idempotency-Key"))
    body = _json_body()
    currency = body.get("currency")
    if not isinstance(currency, str):
        raise ClientError("currency must be an ISO 4217 code", code="invalid_currency", status=422)
    payment, is_new = start_topup_payment(
        g.customer,
        ledger.wallet_of(g.customer, currency),
        body.get("amount_minor"),
        key,
        body.get("payment_method"),
        request.remote_addr,
    )
    return jsonify(payment_json(payment)), 201 if is_new else 200
