"""Orders and the start of a payment: items validated, keys parsed, totals from the catalog."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from flask import Flask

from extensions import db
from services.payments.checkout import create_order, parse_idempotency_key, parse_items
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


def test_a_second_payment_refused_for_an_active_one_keeps_the_order_locked_till_the_end(
    app: Flask,
) -> None:
    """The reported race (2 of 30 orders, a 500 on uq_payments_active_order): the refused
    insert used to roll the whole transaction back, letting the order's lock go, so the
    blocking payment could fail before it was looked up, and nothing was found."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import OperationalError

    from models import Customer
    from services.payments.checkout import start_order_payment
    from services.platform.errors import ConflictError
    from tests.factories import TEST_CARDS, make_order, make_payment

    with app.app_context():
        customer = make_customer()
        first = make_payment(make_order(customer))
        db.session.commit()
        customer_id, order_id = customer.id, first.order_id
    other = create_engine(app.config["SQLALCHEMY_DATABASE_URI"])
    with app.app_context():
        shopper = db.session.get(Customer, customer_id)
        assert shopper is not None and order_id is not None
        with pytest.raises(ConflictError) as refused:
            try:
                start_order_payment(shopper, order_id, uuid.uuid4(), TEST_CARDS["stripe"])
            finally:  # still inside the refusing transaction
                with other.connect() as conn, pytest.raises(OperationalError, match="lock"):
                    conn.execute(
                        text("SELECT id FROM orders WHERE id = :id FOR UPDATE NOWAIT"),
                        {"id": order_id},
                    )
        assert refused.value.code == "order_payment_in_progress"
        db.session.rollback()
    other.dispose()
