"""The JSON API's contract: an OpenAPI 3.1 document, served at /api/openapi.json.

Built from the code's own enums and limits so that it cannot drift from them;
tests/blueprints/test_api_contract.py checks every /api route is described, and
schemathesis checks the running app against the document (0 5xx, 0 responses
that break it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from blueprints.api_bodies import (
    TEXT_PATTERN,
    amount_branch,
    closed,
    new_order,
    with_card,
)
from blueprints.api_errors import error_responses
from blueprints.api_schemas import (
    CURRENCY,
    ERROR,
    MONEY,
    MOVEMENT,
    ORDER,
    PAYMENT,
    REFUND,
    REFUND_REQUEST,
    TRANSITION,
    WALLETS,
    ref,
)
from models.types import MAX_ROW_ID, UUID_RE
from services.payments.cards import CardContract
from services.refunds.requests import MAX_TEXT, MIN_TEXT

JSON = "application/json"


IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": True,
    "description": "a UUID chosen by the client, one per operation: a repeat with the same "
    "key answers the first result (200) instead of acting twice. Compared as a UUID "
    "(either case; spaces around it ignored; only the 8-4-4-4-12 form). One key space for "
    "every customer (a UUID drawn at random never meets another's; a key already used, by "
    "anyone, for another request is 422 idempotency_key_reused). Kept for good: the key is "
    "stored with the payment or wallet movement it made.",
    "schema": {
        "type": "string",
        "format": "uuid",
        "pattern": f"^{UUID_RE.pattern}$",
    },
}


def _id(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_ROW_ID},
    }


LOCATION = {
    "Location": {
        "description": "the created resource's URL",
        "schema": {"type": "string"},
        "required": True,
    }
}


def _link(operation_id: str, parameter: str) -> dict[str, Any]:
    return {"operationId": operation_id, "parameters": {parameter: "$response.body#/id"}}


def _operation(
    operation_id: str,
    summary: str,
    responses: dict[str, tuple[str, str]],
    *,
    errors: tuple[str, ...],
    body: str | None = None,
    parameters: tuple[dict[str, Any], ...] = (),
    links: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    answer: dict[str, Any] = {}
    for status, (schema, text) in responses.items():
        answer[status] = {"description": text, "content": {JSON: {"schema": ref(schema)}}}
        if status == "201":
            answer[status]["headers"] = LOCATION
        if links and status in ("200", "201"):
            answer[status]["links"] = links
    every = ("400", "401", "405", "414", "431", "503")
    with_body = ("413", "415") if body is not None or operation_id.startswith("pay") else ()
    for status in sorted({*every, *with_body, *errors}):
        answer[status] = {"$ref": f"#/components/responses/E{status}"}
    operation: dict[str, Any] = {
        "operationId": operation_id,
        "summary": summary,
        "responses": answer,
    }
    if parameters:
        operation["parameters"] = list(parameters)
    if body is not None:
        content = {JSON: {"schema": ref(body)}}
        operation["requestBody"] = {"required": True, "content": content}
    return operation


REPEAT = "a repeat of an earlier request with the same Idempotency-Key"
TO_ORDER = {
    "getOrder": _link("getOrder", "order_id"),
    "askRefund": _link("askRefund", "order_id"),
    "payOrder": _link("payOrder", "order_id"),
    "payOrderFromWallet": _link("payOrderFromWallet", "order_id"),
}
TO_PAYMENT = {"getPayment": _link("getPayment", "payment_id")}

PATHS: dict[str, dict[str, Any]] = {
    "/api/orders": {
        "post": _operation(
            "createOrder",
            "Create an order; prices and total come from the catalog",
            {"201": ("Order", "the order, open")},
            errors=("422",),
            body="NewOrder",
            links=TO_ORDER,
        )
    },
    "/api/orders/{order_id}": {
        "get": _operation(
            "getOrder",
            "An order of this customer",
            {"200": ("Order", "the order")},
            errors=("404",),
            parameters=(_id("order_id"),),
        )
    },
    "/api/orders/{order_id}/payments": {
        "post": _operation(
            "payOrder",
            "Pay an order by card: the charge runs in the background; poll the payment",
            {
                "201": ("Payment", "the payment, pending"),
                "200": ("Payment", REPEAT),
            },
            errors=("404", "409", "422", "429"),
            body="NewPayment",
            parameters=(_id("order_id"), IDEMPOTENCY_KEY),
            links=TO_PAYMENT,
        )
    },
    "/api/orders/{order_id}/wallet-payments": {
        "post": _operation(
            "payOrderFromWallet",
            "Pay an open order from the wallet in its currency (no body)",
            {"201": ("Movement", "the debit"), "200": ("Movement", REPEAT)},
            errors=("404", "409", "422"),
            parameters=(_id("order_id"), IDEMPOTENCY_KEY),
        )
    },
    "/api/orders/{order_id}/refund-requests": {
        "post": _operation(
            "askRefund",
            "Ask for a refund of a paid order, with a reason; the shop decides and emails",
            {"201": ("RefundRequest", "the request, waiting")},
            errors=("404", "409", "422"),
            body="NewRefundRequest",
            parameters=(_id("order_id"),),
        )
    },
    "/api/payments/{payment_id}": {
        "get": _operation(
            "getPayment",
            "A payment of this customer, with its refunds and transitions",
            {"200": ("Payment", "the payment")},
            errors=("404",),
            parameters=(_id("payment_id"),),
        )
    },
    "/api/wallet": {
        "get": _operation(
            "getWallets",
            "The customer's wallets",
            {"200": ("Wallets", "one per currency")},
            errors=(),
        )
    },
    "/api/wallet/debits": {
        "post": _operation(
            "debitWallet",
            "Debit a wallet",
            {"201": ("Movement", "the debit"), "200": ("Movement", REPEAT)},
            errors=("404", "409", "422"),
            body="NewDebit",
            parameters=(IDEMPOTENCY_KEY,),
        )
    },
    "/api/wallet/topups": {
        "post": _operation(
            "topUpWallet",
            "Top a wallet up by card: a payment like an order's",
            {"201": ("Payment", "the payment, pending"), "200": ("Payment", REPEAT)},
            errors=("404", "422", "429"),
            body="NewTopup",
            parameters=(IDEMPOTENCY_KEY,),
            links=TO_PAYMENT,
        )
    },
}


def document(
    currencies: Sequence[str],
    cards: Sequence[CardContract],
    *,
    catalog: Mapping[str, Sequence[str]],
    max_amount_minor: int,
    card_minimum_minor: Mapping[str, int],
) -> dict[str, Any]:
    """The document for this deployment: its currencies, its providers' card tokens (and
    the currencies each takes), the smallest card payments, the amounts' maximum and the
    SKUs on sale (by currency)."""
    currency = {"type": "string", "enum": list(currencies), "description": "ISO 4217 code"}
    card = {
        "type": "string",
        "pattern": "^(?:" + "|".join(f"(?:{c.token_re})" for c in cards) + ")$",
        "description": "the provider's card token from its browser library (Stripe: pm_..., "
        "Braintree: a payment method nonce); never card data",
        "examples": ["pm_card_visa"],
    }
    provider = {
        "type": "string",
        "enum": [c.provider for c in cards],
        "description": "the provider whose card entry made payment_method (the payment "
        "stays with it); optional: the token's shape names it",
    }
    amount = {"type": "integer", "minimum": 1, "maximum": max_amount_minor}
    debit = closed(
        {
            "amount_minor": amount,
            "currency": CURRENCY,
            "reference": {"type": "string", "maxLength": 200, "pattern": TEXT_PATTERN},
        }
    )
    debit["required"] = ["amount_minor", "currency"]
    topup = with_card({"amount_minor": amount, "currency": CURRENCY}, cards)
    topup["description"] = "the amount is at least the shop's smallest card payment in the currency"
    topup["allOf"] = [
        {
            "anyOf": [
                amount_branch(code, card_minimum_minor.get(code, 1), max_amount_minor)
                for code in currencies
            ]
        },
        {"anyOf": topup.pop("anyOf")},
    ]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Payments monolith API",
            "version": "1",
            "description": "Amounts are integers in minor units; every error body is "
            '{"error": {"code", "message", ...}} (the codes, by status, in each error '
            "response). Request bodies are application/json in UTF-8 (else 415) and hold "
            "only the fields described (else 422 unknown_field). See "
            "docs/architecture.md#json-api.",
        },
        "security": [{"bearer": []}],
        "paths": PATHS,
        "components": {
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "the customer's API token (printed by `flask customers create`)",
                }
            },
            "schemas": {
                "Currency": currency,
                "PaymentMethod": card,
                "Provider": provider,
                "Money": MONEY,
                "Order": ORDER,
                "Payment": PAYMENT,
                "Refund": REFUND,
                "Transition": TRANSITION,
                "Movement": MOVEMENT,
                "Wallets": WALLETS,
                "Error": ERROR,
                "NewOrder": new_order(catalog),
                "NewPayment": with_card({}, cards),
                "NewDebit": debit,
                "NewTopup": topup,
                "RefundRequest": REFUND_REQUEST,
                "NewRefundRequest": closed(
                    {
                        "reason": {
                            "type": "string",
                            "minLength": MIN_TEXT,
                            "maxLength": MAX_TEXT,
                            "allOf": [{"pattern": TEXT_PATTERN}, {"pattern": "[^ \t\n\r]"}],
                            "description": "what went wrong (not only blanks)",
                        }
                    }
                ),
            },
            "responses": error_responses(),
        },
    }
