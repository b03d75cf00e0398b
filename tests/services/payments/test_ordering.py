"""Placing an order: items read and bounded, the total from the catalog; an API client's
order in one statement, with the same rows and the same refusals as the ORM path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from extensions import db
from models import Order, OrderLine
from services.accounts.customers import hash_token, issue_api_token
from services.payments.ordering import create_order, create_order_by_token, parse_items
from services.platform.errors import UnprocessableError
from tests.factories import make_customer, make_product
from tests.helpers import api_customer, api_order, rows, seed_catalog
from tests.round_trips import counted_shop


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (None, "invalid_items"),
        ([], "invalid_items"),
        ("MUG", "invalid_items"),
        ([{"sku": "MUG", "quantity": 0}], "invalid_quantity"),
        ([{"sku": "MUG", "quantity": True}], "invalid_quantity"),
        ([{"sku": "MUG", "quantity": "2"}], "invalid_quantity"),
        ([{"sku": "", "quantity": 1}], "invalid_items"),
        ([{"sku": "MUG", "quantity": 2}, {"sku": "MUG", "quantity": 3}], "duplicate_sku"),
        ([{"sku": "MUG", "quantity": 1, "price_minor": 1}], "unknown_field"),
        ([{"sku": f"S{n}", "quantity": 1} for n in range(51)], "invalid_items"),
    ],
)
def test_bad_items_are_refused_with_a_code(raw: Any, code: str) -> None:
    with pytest.raises(UnprocessableError) as refused:
        parse_items(raw)
    assert refused.value.code == code


def test_items_are_read_by_sku() -> None:
    read = parse_items([{"sku": "MUG", "quantity": 2}, {"sku": "TEE", "quantity": 3}])
    assert read == {"MUG": 2, "TEE": 3}


def test_the_total_comes_from_the_catalog(app_ctx: Flask) -> None:
    customer = make_customer()
    make_product("CUP", price_minor=450)
    db.session.commit()
    order = create_order(customer, {"CUP": 3})
    assert order.total_minor == 1350 and order.currency == "EUR"
    with pytest.raises(UnprocessableError, match="unknown SKU: NOPE"):
        create_order(customer, {"NOPE": 1})


def _order_rows(order_id: int) -> tuple[Any, ...]:
    order = db.session.get_one(Order, order_id)
    lines = db.session.scalars(
        select(OrderLine).where(OrderLine.order_id == order_id).order_by(OrderLine.id)
    )
    return (
        order.customer_id,
        order.status,
        order.total_minor,
        order.currency,
        [(ln.product_id, ln.quantity, ln.unit_price_minor, ln.line_total_minor) for ln in lines],
    )


def test_the_lean_order_writes_the_orm_paths_rows(app_ctx: Flask) -> None:
    customer = make_customer()
    token = issue_api_token(customer)
    for sku, price in (("b-TEE", 1250), ("A-MUG", 450), ("a-CUP", 300)):
        make_product(sku, price_minor=price)
    db.session.commit()
    quantities = {"b-TEE": 1, "a-CUP": 3, "A-MUG": 2}

    lean = create_order_by_token(hash_token(token), quantities)
    orm = create_order(customer, quantities)

    assert lean is not None
    assert (lean.total_minor, lean.currency, lean.lines) == (
        orm.total_minor,
        orm.currency,
        orm.lines,
    )
    assert lean.total_minor == 2 * 450 + 3 * 300 + 1250
    assert _order_rows(lean.id) == _order_rows(orm.id)


@pytest.mark.parametrize(
    ("quantities", "code"),
    [
        ({"CUP": 1, "NOPE": 1}, "unknown_sku"),
        ({"OLD": 1}, "unknown_sku"),  # off sale
        ({"CUP": 1, "DOLLAR": 1}, "mixed_currencies"),
        ({"YEN": 1}, "invalid_total"),  # a currency the shop does not take
        ({"CUP": 100, "DEAR": 100}, "invalid_total"),  # over the largest amount
    ],
)
def test_what_the_orm_path_refuses_the_lean_order_does_not_write(
    app_ctx: Flask, quantities: dict[str, int], code: str
) -> None:
    customer = make_customer()
    token = issue_api_token(customer)
    make_product("CUP", price_minor=300)
    make_product("DEAR", price_minor=9_999)
    make_product("DOLLAR", currency="USD")
    make_product("YEN", currency="JPY")
    make_product("OLD").is_active = False
    db.session.commit()

    assert create_order_by_token(hash_token(token), quantities) is None
    with pytest.raises(UnprocessableError) as refused:
        create_order(customer, quantities)
    assert refused.value.code == code
    assert rows(app_ctx, Order) == 0 and rows(app_ctx, OrderLine) == 0


def test_a_token_nobody_holds_writes_no_order(app_ctx: Flask) -> None:
    customer = make_customer()
    old = issue_api_token(customer)
    issue_api_token(customer)  # the old one revoked
    make_product("CUP")
    db.session.commit()
    assert create_order_by_token(hash_token(old), {"CUP": 1}) is None
    assert create_order_by_token(hash_token("tok_guess"), {"CUP": 1}) is None
    assert rows(app_ctx, Order) == 0


def test_an_api_order_takes_one_round_trip(
    app: Flask, make_app: Any, server_urls: dict[str, str]
) -> None:
    with counted_shop(make_app, server_urls["database"]) as (client, headers, database):
        api_order(client, headers)  # connects the pool
        database.reset()
        order = api_order(client, headers, quantity=3)
        trips = database.reset()
    assert trips == 1
    with app.app_context():
        assert db.session.get_one(Order, order["id"]).total_minor == order["total_minor"]


def test_an_order_after_the_database_dropped_its_connections_is_placed(
    app: Flask, drop_connections: Callable[[], int]
) -> None:
    with app.app_context():
        seed_catalog()
    _, headers = api_customer(app)
    client = app.test_client()
    api_order(client, headers)  # the lean pool holds a connection
    with app.app_context():
        assert drop_connections()
    order = api_order(client, headers)  # the ORM path, on new connections
    assert rows(app, Order) == 2 and order["status"] == "open"
