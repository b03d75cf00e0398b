"""Each lock function holds what its name says and everything before it in the one lock
order (order, payment, refund or dispute), until the transaction ends: probed from a
second connection with NOWAIT."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from flask import Flask
from sqlalchemy import Engine, create_engine, text

from extensions import db
from models import Customer, Order, OrderStatus, Payment, PaymentStatus, Refund
from models.refund import WALLET
from services.movements import locks
from services.platform.errors import NotFoundError
from tests.factories import make_customer, make_dispute, make_order, make_payment, make_refund
from tests.lock_support import is_held


@pytest.fixture
def other(app: Flask) -> Iterator[Engine]:
    engine = create_engine(app.config["SQLALCHEMY_DATABASE_URI"])
    yield engine
    engine.dispose()


def _rows(app: Flask) -> dict[str, int]:
    with app.app_context():
        customer = make_customer()
        for _ in range(3):  # so no order shares its id with a payment (a lookup by the wrong id)
            make_order(customer)
        payment = make_payment(make_order(customer))
        refund, dispute = make_refund(payment), make_dispute(payment)
        db.session.commit()
        assert payment.order_id is not None and payment.order_id != payment.id
        return {
            "orders": payment.order_id,
            "payments": payment.id,
            "refunds": refund.id,
            "disputes": dispute.id,
        }


CASES: list[tuple[str, Callable[[dict[str, int]], object], set[str]]] = [
    ("lock_payment", lambda ids: locks.lock_payment(ids["payments"]), {"orders", "payments"}),
    (
        "lock_found_payment",
        lambda ids: locks.lock_found_payment(ids["payments"], ids["orders"]),
        {"orders", "payments"},
    ),
    ("lock_order_of", lambda ids: locks.lock_order_of(ids["payments"]), {"orders"}),
    (
        "lock_refund",
        lambda ids: locks.lock_refund(ids["refunds"]),
        {"orders", "payments", "refunds"},
    ),
    (
        "lock_dispute",
        lambda ids: locks.lock_dispute(ids["disputes"]),
        {"orders", "payments", "disputes"},
    ),
]


@pytest.mark.parametrize(("name", "lock", "expected"), CASES, ids=[c[0] for c in CASES])
def test_a_lock_holds_its_row_and_those_before_it(
    app: Flask,
    other: Engine,
    name: str,
    lock: Callable[[dict[str, int]], object],
    expected: set[str],
) -> None:
    ids = _rows(app)
    with app.app_context():
        found = lock(ids)
        assert name == "lock_order_of" or found is not None
        held = {table for table, row_id in ids.items() if is_held(other, table, row_id)}
        db.session.rollback()
    assert held == expected
    assert not any(is_held(other, table, row_id) for table, row_id in ids.items())  # released


def test_a_missing_row_locks_nothing(app: Flask) -> None:
    with app.app_context():
        assert locks.lock_refund(2_000_000_000) is None
        assert locks.lock_dispute(2_000_000_000) is None
        assert locks.lock_payment(2_000_000_000) is None
        db.session.rollback()


def test_a_wallet_refund_holds_its_order_and_itself(app: Flask, other: Engine) -> None:
    """A refund of a wallet-paid order has no payment: its order comes first."""
    with app.app_context():
        customer = make_customer()
        make_order(customer)
        order = make_order(customer)
        refund = Refund(
            idempotency_key=uuid.uuid4(),
            order_id=order.id,
            provider=WALLET,
            amount_minor=100,
            currency="EUR",
            reason="a wallet refund",
            actor="ops",
        )
        db.session.add(refund)
        db.session.commit()
        ids = {"orders": order.id, "refunds": refund.id}
        assert locks.lock_refund(refund.id) is refund
        held = {table for table, row_id in ids.items() if is_held(other, table, row_id)}
        db.session.rollback()
    assert held == {"orders", "refunds"}


def test_a_locked_row_is_read_fresh_from_the_database(app: Flask, other: Engine) -> None:
    ids = _rows(app)
    with app.app_context():
        payment = db.session.get(Payment, ids["payments"])  # loaded, then changed elsewhere
        assert payment is not None and payment.status == PaymentStatus.PENDING
        with other.begin() as conn:
            conn.execute(
                text("UPDATE payments SET status = 'unknown' WHERE id = :id"),
                {"id": ids["payments"]},
            )
        locked = locks.lock_payment(ids["payments"])
        assert locked is payment and locked.status == PaymentStatus.UNKNOWN
        db.session.rollback()


def test_a_customers_order_is_theirs_locked_and_fresh(app: Flask, other: Engine) -> None:
    ids = _rows(app)
    with app.app_context():
        order = db.session.get(Order, ids["orders"])
        assert order is not None
        owner = db.session.get(Customer, order.customer_id)
        stranger = make_customer()
        with other.begin() as conn:
            conn.execute(text("UPDATE orders SET status = 'paid' WHERE id = :id"), {"id": order.id})
        assert locks.lock_owned_order(owner, order.id) is order  # type: ignore[arg-type]  # a customer row stands in for the signed-in one
        assert order.status == OrderStatus.PAID and is_held(other, "orders", order.id)
        db.session.rollback()
        with pytest.raises(NotFoundError) as refused:
            locks.lock_owned_order(stranger, ids["orders"])
        db.session.rollback()
    assert (str(refused.value), refused.value.code) == (
        f"no order {ids['orders']}",
        "order_not_found",
    )
