"""Every error the JSON API answers, by status: its stable `code`s, what each means and
the extra fields it carries. The contract (blueprints/api_contract.py) publishes this
table; the contract test checks every code the fuzzer meets is in it, under its status."""

from __future__ import annotations

from typing import Any

from blueprints.guards import MAX_HEADER_BYTES, MAX_HEADERS, MAX_TARGET_BYTES
from providers.events import MAX_INTEGER_DIGITS
from services.payments.ordering import MAX_ORDER_ITEMS, MAX_QUANTITY

# status -> (what the status means, {code: what it means})
ERRORS: dict[str, tuple[str, dict[str, str]]] = {
    "400": (
        "malformed request",
        {
            "invalid_json": "the body is not JSON in UTF-8",
            "invalid_body": "the body is JSON but not an object",
            "invalid_text": "a string holds a control character (other than tab, newline, "
            "carriage return) or a lone surrogate: text that cannot be stored",
            "number_out_of_range": "a number past any field's range (1e400, NaN, an integer "
            f"of more than {MAX_INTEGER_DIGITS} digits)",
            "idempotency_key_missing": "no Idempotency-Key header",
            "idempotency_key_invalid": "the Idempotency-Key is not a UUID (8-4-4-4-12 hex)",
            "bad_request": "the request could not be read (a malformed header or line; "
            "answered by the server before the app)",
        },
    ),
    "401": ("no valid bearer token", {"unauthorized": "send 'Authorization: Bearer <token>'"}),
    "404": (
        "no such resource of this customer",
        {
            "not_found": "no such path",
            "order_not_found": "no order with this id belongs to this customer",
            "payment_not_found": "no payment with this id belongs to this customer",
            "wallet_not_found": "the customer has no wallet in this currency",
        },
    ),
    "405": (
        "the path takes other methods: the Allow header lists them",
        {"method_not_allowed": "see Allow"},
    ),
    "409": (
        "conflicts with the current state; the request may succeed once the state changes",
        {
            "order_not_open": "the order is paid, cancelled or refunded",
            "order_payment_in_progress": "another payment of this order is under way; "
            "`payment_id` names it",
            "insufficient_funds": "the wallet holds less than the amount; `balance` "
            "({amount_minor, currency}) says how much",
            "refund_not_askable": "the order is not paid, its days to ask for a refund "
            "have passed, or a request of it is waiting",
            "currency_not_served": "the provider's merchant account does not take the "
            "order's currency (pay with another provider's card entry)",
        },
    ),
    "413": (
        "the body is larger than the limit; the connection is closed after the answer",
        {"request_entity_too_large": "send a smaller body"},
    ),
    "414": (
        "the path and query are longer than the limit",
        {"uri_too_long": f"{MAX_TARGET_BYTES} bytes"},
    ),
    "415": (
        "the body is not `application/json` (UTF-8)",
        {"unsupported_media_type": "send Content-Type: application/json"},
    ),
    "422": (
        "well-formed but not acceptable; nothing was written",
        {
            "unknown_field": "a field this request does not take (never ignored)",
            "invalid_items": f"items is not a list of 1 to {MAX_ORDER_ITEMS} objects",
            "invalid_quantity": f"a quantity is not an integer from 1 to {MAX_QUANTITY}",
            "duplicate_sku": "a SKU appears on two lines of the order",
            "unknown_sku": "a SKU is not on sale",
            "mixed_currencies": "the SKUs are priced in different currencies",
            "invalid_total": "the order's total is above the shop's maximum",
            "invalid_amount": "amount_minor is not a positive integer at most the maximum",
            "invalid_currency": "currency is not an ISO 4217 code of this shop",
            "invalid_reference": "reference is not a string",
            "invalid_wallet_operation": "the wallet operation cannot be made as asked",
            "currency_mismatch": "the wallet's currency is not the order's",
            "provider_invalid": "provider is not one of the shop's providers",
            "provider_currency_invalid": "the provider's merchant account does not take "
            "this currency",
            "amount_too_small": "under the shop's smallest card payment in this currency; "
            "`minimum` ({amount_minor, currency}) says it",
            "payment_method_missing": "no payment_method (the provider's card token)",
            "payment_method_invalid": "payment_method is not the provider's card token",
            "idempotency_key_reused": "this key was used for another request (another "
            "order, amount, card or customer: keys are one space for every customer)",
            "operation_id_reused": "this key was used for another wallet movement",
            "reason_required": "reason is not 5 to 500 characters (spaces collapsed)",
        },
    ),
    "429": (
        "too many card declines of this customer, address or card (card testing)",
        {"too_many_declines": "retry after Retry-After seconds (`retry_after_s` too)"},
    ),
    "431": (
        "a header is too large, or there are too many",
        {
            "request_header_fields_too_large": f"at most {MAX_HEADERS} headers of "
            f"{MAX_HEADER_BYTES} bytes each"
        },
    ),
    "503": (
        "a dependency is down for a moment",
        {"service_unavailable": "retry after Retry-After seconds"},
    ),
}

# The extra fields some errors carry beside code and message.
DETAILS: dict[str, Any] = {
    "payment_id": {"type": "integer", "description": "order_payment_in_progress"},
    "balance": {"$ref": "#/components/schemas/Money", "description": "insufficient_funds"},
    "minimum": {"$ref": "#/components/schemas/Money", "description": "amount_too_small"},
    "retry_after_s": {"type": "integer", "description": "too_many_declines"},
}


def documented_codes(status: str) -> set[str]:
    return set(ERRORS.get(status, ("", {}))[1])


def error_responses() -> dict[str, Any]:
    """The `components.responses` of every error status, each listing its codes."""
    return {
        f"E{status}": {
            "description": f"{meaning}. Codes: "
            + "; ".join(f"`{code}`: {text}" for code, text in codes.items()),
            "headers": _headers(status),
            "content": {
                "application/json": {
                    "schema": {
                        "allOf": [
                            {"$ref": "#/components/schemas/Error"},
                            {
                                "properties": {
                                    "error": {"properties": {"code": {"examples": list(codes)}}}
                                }
                            },
                        ]
                    }
                }
            },
        }
        for status, (meaning, codes) in ERRORS.items()
    }


def _headers(status: str) -> dict[str, Any]:
    retry = {"description": "seconds to wait", "schema": {"type": "string", "pattern": "^[0-9]+$"}}
    if status in ("429", "503"):
        return {"Retry-After": retry}
    if status == "405":
        return {
            "Allow": {"description": "the methods the path takes", "schema": {"type": "string"}}
        }
    return {}
