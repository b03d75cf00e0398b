"""Orders and the start of a payment: items validated, keys parsed, totals from the catalog."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from flask import Flask

from extensions import db
from services.checkout import create_order, parse_idempotency_key, parse_items
from services.errors import UnprocessableError
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
        ([{"sku": "MUG", "quantity": 60}, {"sku": "MUG", "quantity": 60}], "invalid_quantity"),
        ([{"sku": f"S{n}", "quantity": 1} for n in range(51)], "invalid_items"),
    ],
)
def test_bad_items_are_refused_with_a_code(raw: Any, code: str) -> None:
    with pytest.raises(UnprocessableError) as refused:
        parse_items(raw)
    assert refused.value.code == code


def test_items_of_one_sku_are_merged() -> None:
    merged = parse_items([{"sku": "MUG", "quantity": 2}, {"sku": "MUG", "quantity": 3}])
    assert merged == {"MUG": 5}


@pytest.mark.parametrize("raw", [None, "", "not-a-uuid", "' OR 1=1 --"])
def test_idempotency_keys_must_be_uuids(raw: str | None) -> None:
    with pytest.raises(UnprocessableError) as refused:
        parse_idempotency_key(raw)
    assert refused.value.status == 400
    key = uuid.uuid4()
    assert parse_idempotency_key(f" {key} ") == key


def test_the_total_comes_from_the_catalog(app_ctx: Flask) -> None:
    customer = make_customer()
    make_product("CUP", price_minor=450)
    db.session.commit()
    order = create_order(customer, {"CUP": 3})
    assert order.total_minor == 1350 and order.currency == "EUR"
    with pytest.raises(UnprocessableError, match="unknown SKU: NOPE"):
        create_order(customer, {"NOPE": 1})
