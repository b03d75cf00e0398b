"""The request bodies of the JSON API's contract (blueprints/api_contract.py): closed
objects (an unknown field is refused), text without control characters, and the
limits the server enforces, per currency where they differ."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from services.payments.ordering import MAX_ORDER_ITEMS, MAX_QUANTITY

CARD = {"$ref": "#/components/schemas/PaymentMethod"}
PROVIDER = {"$ref": "#/components/schemas/Provider"}
# What a string of a request may hold: anything but control characters (tab, newline
# and carriage return are text), which are refused as `invalid_text`.
TEXT_PATTERN = "^[^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f]*$"


def closed(properties: dict[str, Any]) -> dict[str, Any]:
    """A request object: every field required, no other (refused as unknown_field)."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def with_card(properties: dict[str, Any], cards: Sequence[Any]) -> dict[str, Any]:
    """A body that pays by card: `properties`, the card token and the provider it is of
    (optional: the token's shape names it), one branch per provider (`cards`:
    services/payments/cards.CardContract): its token's shape, and, where the body names
    a currency, the currencies its merchant account takes."""
    schema = closed({**properties, "payment_method": CARD, "provider": PROVIDER})
    schema["required"].remove("provider")
    schema["anyOf"] = [
        {
            "properties": {
                "payment_method": {"pattern": f"^(?:{card.token_re})$"},
                "provider": {"const": card.provider},
                **(
                    {"currency": {"enum": list(card.currencies)}}
                    if "currency" in properties
                    else {}
                ),
            }
        }
        for card in cards
    ]
    return schema


def new_order(catalog: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """An order's body: 1 to MAX_ORDER_ITEMS lines, one per SKU, every SKU on sale and
    all of one currency (one branch per currency of the catalog)."""
    line = closed(
        {
            "sku": {"type": "string", "minLength": 1, "pattern": TEXT_PATTERN},
            "quantity": {"type": "integer", "minimum": 1, "maximum": MAX_QUANTITY},
        }
    )
    items = {"type": "array", "minItems": 1, "maxItems": MAX_ORDER_ITEMS, "items": line}
    branches = [
        {
            "properties": {
                "items": {
                    "items": {"properties": {"sku": {"enum": list(skus)}}},
                    "allOf": [
                        {
                            "contains": {"properties": {"sku": {"const": sku}}},
                            "minContains": 0,
                            "maxContains": 1,
                        }
                        for sku in skus
                    ],
                }
            }
        }
        for skus in catalog.values()
        if skus
    ]
    schema = closed({"items": items})
    schema["anyOf"] = branches or [
        {"properties": {"items": {"items": {"properties": {"sku": {"enum": []}}}}}}
    ]
    return schema


def amount_branch(currency: str, minimum: int, maximum: int) -> dict[str, Any]:
    return {
        "properties": {
            "currency": {"const": currency},
            "amount_minor": {"minimum": minimum, "maximum": maximum},
        }
    }
