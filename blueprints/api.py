"""The JSON API for programmatic clients: the same services as the pages, bearer-token auth."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from flask import Blueprint, g, jsonify, request, url_for
from flask.typing import ResponseReturnValue

from blueprints.api_contract import document
from extensions import csrf, db
from models import Payment
from models.types import parse_uuid
from providers.events import JSONNumberError, JSONTextError, strict_json
from services.accounts.customers import customer_for_token, hash_token
from services.catalog.products import skus_on_sale_by_currency
from services.payments.cards import card_contracts
from services.payments.checkout import (
    owned_order,
    owned_payment,
    parse_idempotency_key,
    start_order_payment,
    start_topup_payment,
)
from services.payments.intake import NewPayment, pay_order_by_token
from services.payments.lean_read import read_payment_by_token
from services.payments.ordering import (
    NewOrder,
    create_order,
    create_order_by_token,
    parse_items,
)
from services.payments.reads import (
    movement_json,
    new_order_json,
    order_json,
    payment_json,
    refund_request_json,
)
from services.payments.routing import minimum_minor
from services.payments.wallet_orders import pay_order_from_wallet
from services.platform.errors import ClientError
from services.refunds import requests as refund_requests
from services.wallet import ledger
from services.wallet.reads import wallets_of
from settings import settings

bp = Blueprint("api", __name__, url_prefix="/api")
LEAN_FIELDS = frozenset({"payment_method", "provider"})  # a new payment's body, at most
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


@bp.before_request
def json_bodies_only() -> ResponseReturnValue | None:
    """A request body is JSON in UTF-8 and says so (`application/json`, with no charset
    or `utf-8`): anything else is a 415 before the body is read. JSON has one encoding
    (RFC 8259); a `+json` type or another charset would be read as something it is not."""
    if request.method != "POST" or not (
        request.content_length or request.headers.get("Transfer-Encoding")
    ):
        return None
    charset = request.mimetype_params.get("charset", "utf-8").lower()
    if request.mimetype == "application/json" and charset == "utf-8":
        return None
    return api_error(415, "unsupported_media_type", "send the body as application/json (UTF-8)")


@bp.errorhandler(ClientError)
def client_error(exc: ClientError) -> ResponseReturnValue:
    db.session.rollback()
    body = jsonify(error={"code": exc.code, "message": str(exc), **exc.details})
    return body, exc.status, exc.headers()


def _json_body(*fields: str, is_optional: bool = False) -> dict[str, Any]:
    """The request's JSON object, holding only `fields` (a misspelt or unknown field is
    refused, never ignored: the client would think it was read)."""
    data = request.get_data(cache=True)
    if is_optional and not data:
        return {}
    try:
        body = strict_json(data, is_integral_float_int=True)
    except JSONTextError as exc:
        raise ClientError(str(exc), code="invalid_text") from None
    except JSONNumberError as exc:
        raise ClientError(str(exc), code="number_out_of_range") from None
    except ValueError:  # UnicodeDecodeError among them
        raise ClientError("the body is not JSON (UTF-8)", code="invalid_json") from None
    if not isinstance(body, dict):
        raise ClientError("the body must be a JSON object", code="invalid_body")
    unknown = sorted(set(body) - set(fields))
    if unknown:
        raise ClientError(
            f"unknown field {unknown[0][:40]!r}: this request takes {', '.join(fields)}",
            code="unknown_field",
            status=422,
        )
    return body


@bp.get("/openapi.json")
def openapi() -> ResponseReturnValue:
    """The API's contract (OpenAPI 3.1); public, like any published API description."""
    money = settings().money
    described = document(
        money.currencies,
        card_contracts(),
        catalog=skus_on_sale_by_currency(),
        max_amount_minor=money.max_amount_minor,
        card_minimum_minor={c: minimum_minor(c) for c in money.currencies},
    )
    return jsonify(described)


@bp.post("/orders")
def post_order() -> ResponseReturnValue:
    order = _lean_order()  # the common case in one statement (services/payments/ordering.py)
    return _post_order() if order is None else _order_created(order)


def _lean_order() -> NewOrder | None:
    token = _bearer_token()
    if not token:
        return None
    try:
        quantities = _order_items()
    except ClientError:
        return None  # the ORM path answers it, after the token's check
    return create_order_by_token(hash_token(token), quantities)


@token_required
def _post_order() -> ResponseReturnValue:
    """Every other case (errors): decided and answered by the ORM path."""
    return _order_created(create_order(g.customer, _order_items()))


def _order_items() -> dict[str, int]:
    return parse_items(_json_body("items").get("items"))


def _order_created(order: NewOrder) -> ResponseReturnValue:
    return jsonify(new_order_json(order)), 201, _location("api.get_order", order_id=order.id)


@bp.get("/orders/<id:order_id>")
@token_required
def get_order(order_id: int) -> ResponseReturnValue:
    return jsonify(order_json(owned_order(g.customer, order_id)))


@bp.post("/orders/<id:order_id>/payments")
def post_payment(order_id: int) -> ResponseReturnValue:
    new = _lean_payment(order_id)  # the common case in one statement (services/payments/intake.py)
    if new is not None:
        body = payment_json(new, refunds=[], transitions=[new.transition])
        return jsonify(body), 201, _location("api.get_payment", payment_id=new.id)
    return _post_payment(order_id)


def _lean_payment(order_id: int) -> NewPayment | None:
    token, raw_key = _bearer_token(), request.headers.get("Idempotency-Key", "")
    body = request.get_json(silent=True)
    if (
        not token
        or not isinstance(body, dict)
        or not LEAN_FIELDS >= body.keys() >= {"payment_method"}
    ):
        return None
    try:
        key = parse_uuid(raw_key)
    except ValueError:
        return None
    card, provider = body.get("payment_method"), body.get("provider")
    return pay_order_by_token(hash_token(token), order_id, key, card, request.remote_addr, provider)


@token_required
def _post_payment(order_id: int) -> ResponseReturnValue:
    """Every other case (repeats, errors): decided and answered by the ORM path."""
    key = parse_idempotency_key(request.headers.get("Idempotency-Key"))
    body = _json_body("payment_method", "provider", is_optional=True)
    card, provider = body.get("payment_method"), body.get("provider")
    payment, is_new = start_order_payment(
        g.customer, order_id, key, card, request.remote_addr, provider
    )
    return _payment_answer(payment, is_new)


@bp.post("/orders/<id:order_id>/refund-requests")
@token_required
def post_refund_request(order_id: int) -> ResponseReturnValue:
    """The order page's "Ask for a refund", for a client: a person decides, by email."""
    reason = _json_body("reason").get("reason")
    if not isinstance(reason, str):
        raise ClientError("reason must be a string", code="reason_required", status=422)
    asked = refund_requests.ask(g.customer, order_id, reason)
    # Every 201 names a Location: a request has no address of its own, its order has.
    return jsonify(refund_request_json(asked)), 201, _location("api.get_order", order_id=order_id)


@bp.get("/payments/<id:payment_id>")
def get_payment(payment_id: int) -> ResponseReturnValue:
    token = _bearer_token()  # the usual ask in one statement (services/payments/lean_read.py)
    found = read_payment_by_token(hash_token(token), payment_id) if token else None
    if found is not None:
        return jsonify(payment_json(found, refunds=[], transitions=found.transitions))
    return _get_payment(payment_id)


@token_required
def _get_payment(payment_id: int) -> ResponseReturnValue:
    """Every other case (no such payment of the token's customer, refunds, an archived
    story): the ORM path."""
    return jsonify(payment_json(owned_payment(g.customer, payment_id)))


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
    body = _json_body("amount_minor", "currency", "reference")
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
    return _movement_answer(movement)


@bp.post("/orders/<id:order_id>/wallet-payments")
@token_required
def post_wallet_payment(order_id: int) -> ResponseReturnValue:
    """Pay an open order from the wallet; the Idempotency-Key is the debit's operation id."""
    operation_id = str(parse_idempotency_key(request.headers.get("Idempotency-Key")))
    movement = pay_order_from_wallet(g.customer, order_id, operation_id)
    return _movement_answer(movement)


@bp.post("/wallet/topups")
@token_required
def post_topup() -> ResponseReturnValue:
    """Top a wallet up through the provider: a payment like an order's, same key rules."""
    key = parse_idempotency_key(request.headers.get("Idempotency-Key"))
    body = _json_body("amount_minor", "currency", "payment_method", "provider")
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
        body.get("provider"),
    )
    return _payment_answer(payment, is_new)


def _location(endpoint: str, **values: Any) -> dict[str, str]:
    return {"Location": url_for(endpoint, **values)}


def _payment_answer(payment: Payment, is_new: bool) -> ResponseReturnValue:
    """201 with the payment's Location when this request made it; 200 for a repeat."""
    if is_new:
        return (
            jsonify(payment_json(payment)),
            201,
            _location("api.get_payment", payment_id=payment.id),
        )
    return jsonify(payment_json(payment)), 200


def _movement_answer(movement: ledger.Movement) -> ResponseReturnValue:
    """201 with the wallets' Location for a new movement; 200 for a repeat."""
    if movement.is_replay:
        return jsonify(movement_json(movement)), 200
    return jsonify(movement_json(movement)), 201, _location("api.get_wallet")
