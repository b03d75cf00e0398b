"""Paying an order from the wallet: once per operation id, never a paid order again."""

from __future__ import annotations

import dataclasses

import pytest
from flask import Flask
from sqlalchemy import func, select

from extensions import db
from models import (
    Customer,
    EmailKind,
    Order,
    OrderStatus,
    OutboxMessage,
    PaymentStatus,
    Wallet,
)
from services.payments.wallet_orders import pay_order_from_wallet
from services.platform.errors import ConflictError
from services.wallet import ledger
from tests.factories import make_customer, make_order, make_payment, make_wallet
from tests.helpers import got


def test_an_order_is_paid_once_and_a_repeat_returns_the_original(app_ctx: Flask) -> None:
    customer = make_customer()
    target = make_wallet(customer)
    order = make_order(customer, price_minor=600)
    db.session.commit()
    ledger.credit(target, 1000, "fund")
    first = pay_order_from_wallet(customer, order.id, "pay-1")
    again = pay_order_from_wallet(customer, order.id, "pay-1")
    assert not first.is_replay and again.is_replay and again.entry_id == first.entry_id
    assert got(Wallet, target.id).balance_minor == 400
    assert order.status == OrderStatus.PAID
    with pytest.raises(ConflictError) as refused:
        pay_order_from_wallet(customer, order.id, "pay-2")  # another payment of a paid order
    assert refused.value.code == "order_not_open"


def _paid_twice_over(customer: Customer, order: Order, operation_id: str) -> ledger.Movement:
    """Pay the order from its customer's wallet, funded with enough for it (5000)."""
    target = db.session.scalar(
        select(Wallet).where(Wallet.customer_id == customer.id, Wallet.currency == order.currency)
    ) or make_wallet(customer, order.currency)
    ledger.credit(target, 5000, f"fund:{operation_id}")
    return pay_order_from_wallet(customer, order.id, operation_id)


def test_a_repeat_of_the_payment_returns_the_original_movement_whole(app_ctx: Flask) -> None:
    customer = make_customer()
    order = make_order(customer, price_minor=600)
    db.session.commit()
    first = _paid_twice_over(customer, order, "pay-1")
    again = pay_order_from_wallet(customer, order.id, "pay-1")
    assert again == dataclasses.replace(first, is_replay=True)
    assert (first.amount_minor, first.balance_after_minor) == (-600, 4400)


def test_the_order_is_paid_in_its_currency_and_its_receipt_goes_to_its_customer(
    app_ctx: Flask,
) -> None:
    customer = make_customer()
    make_wallet(customer)  # an EUR wallet too: the order's currency picks the wallet
    order = make_order(customer, price_minor=700)
    order.currency = "USD"
    db.session.commit()
    movement = _paid_twice_over(customer, order, "pay-usd")
    paid_from = db.session.get(Wallet, movement.wallet_id)
    assert paid_from is not None and paid_from.currency == "USD"
    assert paid_from.balance_minor == 4300
    assert order.status == OrderStatus.PAID
    receipts = db.session.execute(
        select(OutboxMessage.kind, OutboxMessage.subject_id, OutboxMessage.recipient)
    ).all()
    assert receipts == [(EmailKind.WALLET_RECEIPT, order.id, customer.email)]
    pay_order_from_wallet(customer, order.id, "pay-usd")  # a repeat sends nothing more
    assert db.session.scalar(select(func.count()).select_from(OutboxMessage)) == 1


def test_an_order_that_is_not_open_says_so(app_ctx: Flask) -> None:
    customer = make_customer()
    order = make_order(customer)
    order.status = OrderStatus.REFUNDED
    db.session.commit()
    with pytest.raises(ConflictError) as refused:
        _paid_twice_over(customer, order, "pay-late")
    assert (str(refused.value), refused.value.code) == (
        f"order {order.id} is refunded",
        "order_not_open",
    )


def test_a_card_payment_under_way_holds_the_wallet_back_but_a_failed_one_does_not(
    app_ctx: Flask,
) -> None:
    customer = make_customer()
    order, elsewhere = make_order(customer), make_order(customer)
    make_payment(elsewhere)  # another order's card payment stands in nobody's way
    failed = make_payment(order)
    failed.status = PaymentStatus.FAILED
    db.session.commit()
    under_way = make_payment(order)
    under_way.status = PaymentStatus.UNKNOWN
    db.session.commit()
    with pytest.raises(ConflictError) as refused:
        _paid_twice_over(customer, order, "pay-card")
    assert (str(refused.value), refused.value.code, refused.value.details) == (
        f"order {order.id} already has payment {under_way.id} under way",
        "order_payment_in_progress",
        {"payment_id": under_way.id},
    )
    under_way.status = PaymentStatus.FAILED
    db.session.commit()
    assert not _paid_twice_over(customer, order, "pay-card-2").is_replay
