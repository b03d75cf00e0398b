"""Placing an order: the client's lines read and bounded, priced from the catalog
(never from the client), the order and its lines written in one statement."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select, text

from extensions import db
from models import Customer, OrderStatus, Product
from models.money import InvalidAmountError, validate_money
from models.types import utcnow
from services.platform.errors import UnprocessableError
from settings import settings

MAX_ORDER_ITEMS = 50
MAX_QUANTITY = 100


def parse_items(raw: Any) -> dict[str, int]:
    """Validate `[{"sku": str, "quantity": int}, ...]`, one line per SKU; return
    quantities by SKU."""
    if not isinstance(raw, list) or not raw:
        raise UnprocessableError("items must be a non-empty list", code="invalid_items")
    if len(raw) > MAX_ORDER_ITEMS:
        raise UnprocessableError(f"at most {MAX_ORDER_ITEMS} items", code="invalid_items")
    quantities: dict[str, int] = {}
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise UnprocessableError(f"items[{index}] must be an object", code="invalid_items")
        unknown = sorted(set(item) - {"sku", "quantity"})
        if unknown:
            raise UnprocessableError(
                f"items[{index}] has an unknown field {unknown[0][:40]!r}: "
                "an item takes sku and quantity",
                code="unknown_field",
            )
        sku, quantity = item.get("sku"), item.get("quantity")
        if not isinstance(sku, str) or not sku.strip():
            raise UnprocessableError(f"items[{index}].sku must be a string", code="invalid_items")
        if (
            isinstance(quantity, bool)
            or not isinstance(quantity, int)
            or not 1 <= quantity <= MAX_QUANTITY
        ):
            raise UnprocessableError(
                f"items[{index}].quantity must be an integer from 1 to {MAX_QUANTITY}",
                code="invalid_quantity",
            )
        if sku in quantities:  # one line per SKU, as the contract says (never summed)
            raise UnprocessableError(
                f"items[{index}]: {sku[:40]!r} is on an earlier line", code="duplicate_sku"
            )
        quantities[sku] = quantity
    return quantities


@dataclass(frozen=True)
class NewLine:
    sku: str
    quantity: int
    unit_price_minor: int
    line_total_minor: int


@dataclass(frozen=True)
class NewOrder:
    """An order just created, as its statement wrote it: the reply needs no read back."""

    id: int
    status: OrderStatus
    total_minor: int
    currency: str
    created_at: datetime
    lines: tuple[NewLine, ...]


# The order and its lines in one statement (one round trip, one commit).
_INSERT_ORDER = text("""
WITH new_order AS (
    INSERT INTO orders (customer_id, status, total_minor, currency, created_at, updated_at)
    VALUES (:customer_id, :status, :total_minor, :currency, :now, :now)
    RETURNING id
)
INSERT INTO order_lines (order_id, product_id, quantity, unit_price_minor, line_total_minor)
SELECT new_order.id, line.product_id, line.quantity, line.unit_price_minor,
       line.line_total_minor
FROM new_order, jsonb_to_recordset(CAST(:lines AS jsonb)) AS line(
    product_id bigint, quantity integer, unit_price_minor bigint, line_total_minor bigint)
RETURNING order_id
""")


def create_order(customer: Customer, quantities: dict[str, int]) -> NewOrder:
    """Create an open order priced from the catalog (never from the client). Commits."""
    products = {
        p.sku: p
        for p in db.session.scalars(
            select(Product).where(Product.sku.in_(quantities), Product.is_active.is_(True))
        )
    }
    unknown = sorted(set(quantities) - set(products))
    if unknown:
        raise UnprocessableError(f"unknown SKU: {', '.join(unknown)}", code="unknown_sku")
    currencies = {p.currency for p in products.values()}
    if len(currencies) != 1:
        raise UnprocessableError(
            "all items of an order must have one currency", code="mixed_currencies"
        )
    lines = tuple(
        NewLine(sku, qty, products[sku].price_minor, products[sku].price_minor * qty)
        for sku, qty in sorted(quantities.items())
    )
    total = sum(line.line_total_minor for line in lines)
    currency = currencies.pop()
    try:
        validate_money(
            total,
            currency,
            max_minor=settings().money.max_amount_minor,
            allowed=settings().money.currencies,
        )
    except InvalidAmountError as exc:
        raise UnprocessableError(f"order total: {exc}", code="invalid_total") from None
    now = utcnow()
    rows = [
        {
            "product_id": products[line.sku].id,
            "quantity": line.quantity,
            "unit_price_minor": line.unit_price_minor,
            "line_total_minor": line.line_total_minor,
        }
        for line in lines
    ]
    order_id = db.session.scalars(
        _INSERT_ORDER,
        {
            "customer_id": customer.id,
            "status": OrderStatus.OPEN.value,
            "total_minor": total,
            "currency": currency,
            "now": now,
            "lines": json.dumps(rows),
        },
    ).first()
    db.session.commit()
    assert order_id is not None  # an order has a line at least (parse_items)
    return NewOrder(order_id, OrderStatus.OPEN, total, currency, now, lines)
