"""Placing an order: the client's lines read and bounded, priced from the catalog
(never from the client), the order and its lines written in one statement.

An API client's order takes one statement on the lean pool (`create_order_by_token`):
it checks the bearer token, prices the lines and inserts the order and its lines, or
inserts nothing, and the ORM path (`create_order`) says what is wrong."""

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
from services.platform import autocommit
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


# The ORM path's checks in one statement: the token's customer, every SKU on sale, one
# currency the shop takes, a total from 1 to the largest amount. Any miss inserts nothing.
_INSERT_BY_TOKEN = autocommit.plain("""
WITH who AS (
    SELECT id FROM customers WHERE api_token_hash = :token_hash
), priced AS (
    SELECT p.id AS product_id, p.sku, a.quantity, p.price_minor,
        p.price_minor * a.quantity AS line_total_minor, p.currency
    FROM jsonb_to_recordset(CAST(:items AS jsonb)) AS a(sku text, quantity integer)
    JOIN products p ON p.sku = a.sku AND p.is_active
), summary AS (
    SELECT count(*) AS lines, min(currency) AS currency, max(currency) AS last_currency,
        sum(line_total_minor) AS total_minor
    FROM priced
), new_order AS (
    INSERT INTO orders (customer_id, status, total_minor, currency, created_at, updated_at)
    SELECT who.id, :status, summary.total_minor, summary.currency, :now, :now
    FROM who, summary
    WHERE summary.lines = :lines AND summary.currency = summary.last_currency
        AND summary.currency = ANY(:currencies)
        AND summary.total_minor BETWEEN 1 AND :max_minor
    RETURNING id, total_minor
), new_lines AS (
    INSERT INTO order_lines (order_id, product_id, quantity, unit_price_minor,
        line_total_minor)
    SELECT new_order.id, product_id, quantity, price_minor, line_total_minor
    FROM new_order, priced ORDER BY priced.sku COLLATE "C"
)
SELECT new_order.id, new_order.total_minor, priced.sku, priced.quantity,
    priced.price_minor, priced.line_total_minor, priced.currency
FROM new_order, priced
""")


def create_order_by_token(token_hash: str, quantities: dict[str, int]) -> NewOrder | None:
    """An API client's open order (the lines as `parse_items` read them) in one statement
    of its own (committed), or None: take the ORM path, which answers whatever is wrong
    (an unknown token, SKU or currency, a total out of bounds) or a dropped connection."""
    money, now = settings().money, utcnow()
    params = {
        "token_hash": token_hash,
        "items": json.dumps([{"sku": s, "quantity": q} for s, q in quantities.items()]),
        "lines": len(quantities),
        "status": OrderStatus.OPEN.value,
        "currencies": list(money.currencies),
        "max_minor": money.max_amount_minor,
        "now": now,
    }
    try:
        rows = autocommit.all_rows(_INSERT_BY_TOKEN, params)
    except autocommit.ConnectionLost:
        return None  # an order not acknowledged may be left open: nobody pays it
    if not rows:
        return None
    lines = tuple(
        NewLine(r.sku, r.quantity, r.price_minor, r.line_total_minor)
        for r in sorted(rows, key=lambda r: r.sku)
    )
    first = rows[0]
    return NewOrder(first.id, OrderStatus.OPEN, first.total_minor, first.currency, now, lines)
