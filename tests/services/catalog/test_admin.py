"""Admins keep the catalog: validated, recorded with the admin; an edit never changes an
order already placed; a retired product leaves the catalog and new orders."""

from __future__ import annotations

import json

import pytest
from flask import Flask
from sqlalchemy import select

from extensions import db
from models import OrderLine, ProductChange
from services.catalog.admin import clean, create_product, edit_product, set_active
from services.catalog.products import active_product
from services.payments.ordering import create_order
from services.platform.errors import ClientError
from tests.factories import make_customer

MUG = {"sku": "mug-2", "name": " Big  mug ", "price": "15.00", "currency": "EUR"}


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [("sku", "bad sku!", "invalid_sku"), ("name", "  ", "invalid_name"),
     ("price", "0", "invalid_amount"), ("price", "12,50", "invalid_amount"),
     ("price", "9" * 20, "invalid_amount"),
     ("currency", "XXX", "invalid_amount")],
)  # fmt: skip
def test_bad_products_are_refused(app_ctx: Flask, field: str, value: str, code: str) -> None:
    with pytest.raises(ClientError) as refused:
        clean({**MUG, field: value})
    assert refused.value.code == code


def test_create_edit_retire_recorded_and_orders_keep_their_prices(app_ctx: Flask) -> None:
    product = create_product(MUG, "ops@example.com")
    assert (product.sku, product.name) == ("MUG-2", "Big mug")
    customer = make_customer()
    order = create_order(customer, {"MUG-2": 2})
    edit_product(product.id, {**MUG, "price": "19,00"}, "ops@example.com", "it")
    line = db.session.scalar(select(OrderLine).where(OrderLine.order_id == order.id))
    assert line is not None and line.unit_price_minor == 1500 and order.total_minor == 3000
    set_active(product.id, False, "boss@example.com")
    assert active_product("MUG-2") is None
    with pytest.raises(ClientError) as refused:
        create_order(customer, {"MUG-2": 1})
    assert refused.value.code == "unknown_sku"
    changes = db.session.scalars(select(ProductChange).order_by(ProductChange.id)).all()
    assert [(c.action, c.actor) for c in changes] == [
        ("created", "ops@example.com"),
        ("edited", "ops@example.com"),
        ("retired", "boss@example.com"),
    ]
    assert json.loads(changes[1].changes) == {"price_minor": [1500, 1900]}


def test_a_taken_sku_is_refused(app_ctx: Flask) -> None:
    create_product(MUG, "ops@example.com")
    with pytest.raises(ClientError) as refused:
        create_product({**MUG, "name": "another"}, "ops@example.com")
    assert refused.value.code == "sku_taken"
