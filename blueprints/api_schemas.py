"""The response objects of the JSON API's contract (blueprints/api_contract.py), built
from the models' own enums: what a client reads back."""

from __future__ import annotations

import enum
from typing import Any

from blueprints.api_errors import DETAILS
from models import (
    OrderStatus,
    PaymentPurpose,
    PaymentStatus,
    RefundRequestStatus,
    RefundStatus,
    TransitionSource,
)


def ref(name: str) -> dict[str, str]:
    """A reference to one of the document's schemas."""
    return {"$ref": f"#/components/schemas/{name}"}


def values(kind: type[enum.StrEnum]) -> dict[str, Any]:
    """A string that is one of the enum's stored values."""
    return {"type": "string", "enum": [member.value for member in kind]}


def response_object(
    properties: dict[str, Any], *, optional: tuple[str, ...] = ()
) -> dict[str, Any]:
    """An object the server answers: every property present unless `optional` (open:
    a later version may add properties)."""
    required = [name for name in properties if name not in optional]
    return {"type": "object", "properties": properties, "required": required}


INTEGER = {"type": "integer"}
STRING = {"type": "string"}
NULLABLE_STRING = {"type": ["string", "null"]}
NULLABLE_ID = {"type": ["integer", "null"]}
TIMESTAMP = {"type": "string", "format": "date-time"}
CURRENCY = ref("Currency")
# Amounts are integers in the currency's minor unit (cents), never decimals.
AMOUNT = {"type": "integer", "description": "minor units of the currency"}

REFUND = response_object(
    {
        "id": INTEGER,
        "status": values(RefundStatus),
        "amount_minor": AMOUNT,
        "currency": CURRENCY,
        "to": {"type": "string", "enum": ["wallet", "card"]},
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
    }
)
TRANSITION = response_object(
    {
        "from": {"anyOf": [values(PaymentStatus), {"type": "null"}]},
        "to": values(PaymentStatus),
        "source": values(TransitionSource),
        "reason": STRING,
        "at": TIMESTAMP,
    }
)
PAYMENT = response_object(
    {
        "id": INTEGER,
        "status": values(PaymentStatus),
        "is_final": {"type": "boolean"},
        "purpose": values(PaymentPurpose),
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
                response_object(
                    {"type": {"const": "redirect_to_url"}, "url": {"type": "string"}},
                ),
                {"type": "null"},
            ],
        },
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
        "refunds": {"type": "array", "items": ref("Refund")},
        "refunded_minor": AMOUNT,
        "transitions": {"type": "array", "items": ref("Transition")},
    }
)
ORDER = response_object(
    {
        "id": INTEGER,
        "status": values(OrderStatus),
        "total_minor": AMOUNT,
        "currency": CURRENCY,
        "refunds": {"type": "array", "items": ref("Refund")},
        "refunded_minor": AMOUNT,
        "lines": {
            "type": "array",
            "items": response_object(
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
MOVEMENT = response_object(
    {
        "operation_id": {"type": "string", "format": "uuid"},
        "wallet_id": INTEGER,
        "entry_id": INTEGER,
        "amount_minor": AMOUNT,
        "balance_after_minor": AMOUNT,
    }
)
WALLETS = response_object(
    {
        "wallets": {
            "type": "array",
            "items": response_object(
                {"id": INTEGER, "currency": CURRENCY, "balance_minor": AMOUNT}
            ),
        }
    }
)
ERROR = response_object(
    {
        "error": {
            "type": "object",
            "properties": {"code": STRING, "message": STRING, **DETAILS},
            "required": ["code", "message"],
        }
    }
)
MONEY = response_object({"amount_minor": AMOUNT, "currency": STRING})
REFUND_REQUEST = response_object(
    {
        "id": INTEGER,
        "order_id": INTEGER,
        "status": values(RefundRequestStatus),
        "reason": STRING,
        "refund_id": NULLABLE_ID,
        "decision_message": NULLABLE_STRING,
        "created_at": TIMESTAMP,
        "decided_at": {"type": ["string", "null"], "format": "date-time"},
    }
)
