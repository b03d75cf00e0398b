"""The JSON API's contract: an OpenAPI 3.1 document, served at /api/openapi.json.

Built from the code's own enums and limits so that it cannot drift from them;
tests/blueprints/test_api_contract.py checks every /api route is described, and
schemathesis checks the running app against the document (0 5xx, 0 responses
that break it)."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

from models import OrderStatus, PaymentPurpose, PaymentStatus, RefundStatus, TransitionSource
from models.types import MAX_ROW_ID
from services.payments.checkout import MAX_ORDER_ITEMS, MAX_QUANTITY

JSON = "application/json"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _values(kind: type[enum.StrEnum]) -> dict[str, Any]:
    return {"type": "string", "enum": [member.value for member in kind]}


def _object(properties: dict[str, Any], *, optional: tuple[str, ...] = ()) -> dict[str, Any]:
    required = [name for name in properties if name not in optional]
    return {"type": "object", "properties": properties, "required": required}


INTEGER = {"type": "integer"}
STRING = {"type": "string"}
NULLABLE_STRING = {"type": ["string", "null"]}
NULLABLE_ID = {"type": ["integer", "null"]}
TIMESTAMP = {"type": "string", "format": "date-time"}
CURRENCY = _ref("Currency")
# Amounts are integers in the currency's minor unit (cents), never decimals.
AMOUNT = {"type": "integer", "description": "minor units of the currency"}

REFUND = _object(
    {
        "id": INTEGER,
        "status": _values(RefundStatus),
        "amount_minor": AMOUNT,
        "currency": CURRENCY,
        "to": {"type": "string", "enum": ["wallet", "card"]},
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
    }
)
TRANSITION = _object(
    {
        "from": {"anyOf": [_values(PaymentStatus), {"type": "null"}]},
        "to": _values(PaymentStatus),
        "source": _values(TransitionSource),
        "reason": STRING,
        "at": TIMESTAMP,
    }
)
PAYMENT = _object(
    {
        "id": INTEGER,
        "status": _values(PaymentStatus),
        "is_final": {"type": "boolean"},
        "purpose": _values(PaymentPurpose),
        "order_id": NULLABLE_ID,
        "wallet_id": NULLABLE_ID,
        "provider": STRING,
        "amount_minor": AMOUNT,
        "currency": CURRENCY,
        "idempotency_key": {"type": "string", "format": "uuid"},
        "provider_payment_id": NULLABLE_STRING,
        "decline_code": NULLABLE_STRING,
        "payment_method": NULLABLE_STRING,
        "next_action": {
            "description": "while the payment requires action: where the customer authenticates",
            "anyOf": [
                _object(
                    {"type": {"const": "redirect_to_url"}, "url": {"type": "string"}},
                ),
                {"type": "null"},
            ],
        },
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
        "refunds": {"type": "array", "items": _ref("Refund")},
        "refunded_minor": AMOUNT,
        "transitions": {"type": "array", "items": _ref("Transition")},
    }
)
ORDER = _object(
    {
        "id": INTEGER,
        "status": _values(OrderStatus),
        "total_minor": AMOUNT,
        "currency": CURRENCY,
        "refunds": {"type": "array", "items": _ref("Refund")},
        "refunded_minor": AMOUNT,
        "lines": {
            "type": "array",
            "items": _object(
                {
                    "sku": STRING,
                    "quantity": INTEGER,
                    "unit_price_minor": AMOUNT,
                    "line_total_minor": AMOUNT,
                }
            ),
        },
        "created_at": TIMESTAMP,
    }
)
MOVEMENT = _object(
    {
        "operation_id": {"type": "string", "format": "uuid"},
        "wallet_id": INTEGER,
        "entry_id": INTEGER,
        "amount_minor": AMOUNT,
        "balance_after_minor": AMOUNT,
    }
)
WALLETS = _object(
    {
        "wallets": {
            "type": "array",
            "items": _object({"id": INTEGER, "currency": CURRENCY, "balance_minor": AMOUNT}),
        }
    }
)
ERROR = _object(
    {
        "error": {
            "type": "object",
            "properties": {"code": STRING, "message": STRING},
            "required": ["code", "message"],
            "additionalProperties": True,  # details of some errors (e.g. the existing payment)
        }
    }
)
NEW_ORDER = _object(
    {
        "items": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_ORDER_ITEMS,
            "items": _object(
                {
                    "sku": {"type": "string", "minLength": 1},
                    "quantity": {"type": "integer", "minimum": 1, "maximum": MAX_QUANTITY},
                }
            ),
        }
    }
)
CARD = _ref("PaymentMethod")
NEW_PAYMENT = _object({"payment_method": CARD})
NEW_DEBIT = _object(
    {
        "amount_minor": {"type": "integer", "minimum": 1},
        "currency": CURRENCY,
        "reference": {"type": "string", "maxLength": 200},
    },
    optional=("reference",),
)
NEW_TOPUP = _object(
    {
        "amount_minor": {"type": "integer", "minimum": 1},
        "currency": CURRENCY,
        "payment_method": CARD,
    }
)

ERRORS = {
    "400": "malformed request: not JSON, a missing or invalid Idempotency-Key",
    "401": "no valid bearer token",
    "404": "no such order or payment of this customer, or no wallet in that currency",
    "409": "conflicts with the current state (e.g. the order is paid or being paid)",
    "413": "the body is larger than the limit",
    "429": "too_many_declines: too many card payments of this customer or address were "
    "declined lately (card testing); retry after Retry-After seconds",
    "422": "well-formed but not acceptable: invalid items, amounts, currency, card token; "
    "an Idempotency-Key already used for another operation",
    "503": "a dependency is down for a moment: retry after Retry-After seconds",
}
IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": True,
    "description": "a UUID chosen by the client, one per operation: a repeat with the same "
    "key answers the first result (200) instead of acting twice",
    "schema": {"type": "string", "format": "uuid"},
}


def _id(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_ROW_ID},
    }


def _operation(
    summary: str,
    responses: dict[str, tuple[str, str]],
    *,
    errors: tuple[str, ...],
    body: str | None = None,
    parameters: tuple[dict[str, Any], ...] = (),
) -> dict[str, Any]:
    answer: dict[str, Any] = {
        status: {"description": text, "content": {JSON: {"schema": _ref(schema)}}}
        for status, (schema, text) in responses.items()
    }
    for status in ("401", *errors, "503"):
        answer[status] = {"$ref": f"#/components/responses/E{status}"}
    operation: dict[str, Any] = {"summary": summary, "responses": answer}
    if parameters:
        operation["parameters"] = list(parameters)
    if body is not None:
        schema = {"schema": _ref(body)}
        operation["requestBody"] = {"required": True, "content": {JSON: schema}}
    return operation


REPEAT = "a repeat of an earlier request with the same Idempotency-Key"
BODY_ERRORS = ("400", "409", "413", "422")

PATHS: dict[str, dict[str, Any]] = {
    "/api/orders": {
        "post": _operation(
            "Create an order; prices and total come from the catalog",
            {"201": ("Order", "the order, open")},
            errors=("400", "413", "422"),
            body="NewOrder",
        )
    },
    "/api/orders/{order_id}": {
        "get": _operation(
            "An order of this customer",
            {"200": ("Order", "the order")},
            errors=("404",),
            parameters=(_id("order_id"),),
        )
    },
    "/api/orders/{order_id}/payments": {
        "post": _operation(
            "Pay an order by card: the charge runs in the background; poll the payment",
            {
                "201": ("Payment", "the payment, pending"),
                "200": ("Payment", REPEAT),
            },
            errors=("404", *BODY_ERRORS, "429"),
            body="NewPayment",
            parameters=(_id("order_id"), IDEMPOTENCY_KEY),
        )
    },
    "/api/orders/{order_id}/wallet-payments": {
        "post": _operation(
            "Pay an open order from the wallet in its currency",
            {"201": ("Movement", "the debit"), "200": ("Movement", REPEAT)},
            errors=("400", "404", "409", "422"),
            parameters=(_id("order_id"), IDEMPOTENCY_KEY),
        )
    },
    "/api/payments/{payment_id}": {
        "get": _operation(
            "A payment of this customer, with its refunds and transitions",
            {"200": ("Payment", "the payment")},
            errors=("404",),
            parameters=(_id("payment_id"),),
        )
    },
    "/api/wallet": {
        "get": _operation(
            "The customer's wallets", {"200": ("Wallets", "one per currency")}, errors=()
        )
    },
    "/api/wallet/debits": {
        "post": _operation(
            "Debit a wallet",
            {"201": ("Movement", "the debit"), "200": ("Movement", REPEAT)},
            errors=(*BODY_ERRORS, "404"),
            body="NewDebit",
            parameters=(IDEMPOTENCY_KEY,),
        )
    },
    "/api/wallet/topups": {
        "post": _operation(
            "Top a wallet up by card: a payment like an order's",
            {"201": ("Payment", "the payment, pending"), "200": ("Payment", REPEAT)},
            errors=(*BODY_ERRORS, "404", "429"),
            body="NewTopup",
            parameters=(IDEMPOTENCY_KEY,),
        )
    },
}


def document(currencies: Sequence[str], card_pattern: str) -> dict[str, Any]:
    """The document for this deployment: its currencies and its provider's card token."""
    currency = {"type": "string", "enum": list(currencies), "description": "ISO 4217 code"}
    card = {
        "type": "string",
        "pattern": f"^(?:{card_pattern})$",
        "description": "the provider's card token from its browser library (Stripe: pm_...); "
        "never card data",
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Payments monolith API",
            "version": "1",
            "description": "Amounts are integers in minor units; every error body is "
            '{"error": {"code", "message"}}. See docs/architecture.md#json-api.',
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
                "Order": ORDER,
                "Payment": PAYMENT,
                "Refund": REFUND,
                "Transition": TRANSITION,
                "Movement": MOVEMENT,
                "Wallets": WALLETS,
                "Error": ERROR,
                "NewOrder": NEW_ORDER,
                "NewPayment": NEW_PAYMENT,
                "NewDebit": NEW_DEBIT,
                "NewTopup": NEW_TOPUP,
            },
            "responses": {
                f"E{status}": {"description": text, "content": {JSON: {"schema": _ref("Error")}}}
                for status, text in ERRORS.items()
            },
        },
    }
