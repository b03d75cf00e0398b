"""The start of a payment: keys parsed, one active payment per order."""

from __future__ import annotations

import uuid

import pytest
from flask import Flask

from extensions import db
from services.payments.checkout import parse_idempotency_key
from services.platform.errors import UnprocessableError
from tests.factories import make_customer


@pytest.mark.parametrize("raw", [None, "", "not-a-uuid", "' OR 1=1 --"])
def test_idempotency_keys_must_be_uuids(raw: str | None) -> None:
    with pytest.raises(UnprocessableError) as refused:
        parse_idempotency_key(raw)
    assert refused.value.status == 400
    key = uuid.uuid4()
    assert parse_idempotency_key(f" {key} ") == key


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
