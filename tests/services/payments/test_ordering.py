"""Placing an order: items read and bounded, the total from the catalog."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from extensions import db
from services.payments.ordering import create_order, parse_items
from services.platform.errors import UnprocessableError
from tests.factories import make_customer, make_product


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
