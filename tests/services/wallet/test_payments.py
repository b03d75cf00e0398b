"""Paying an order from the wallet: once per operation id, never a paid order again."""

from __future__ import annotations

import pytest
from flask import Flask

from extensions import db
from models import OrderStatus, Wallet
from services.platform.errors import ConflictError
from services.wallet import ledger
from services.wallet.payments import pay_order_from_wallet
from tests.factories import make_customer, make_order, make_wallet


def test_an_order_is_paid_once_and_a_repeat_returns_the_original(app_ctx: Flask) -> None:
    customer = make_customer()
    target = make_wallet(customer)
    order = make_order(customer, price_minor=600)
    db.session.commit()
    ledger.credit(target, 1000, "fund")
    first = pay_order_from_wallet(customer, order.id, "pay-1")
    again = pay_order_from_wallet(customer, order.id, "pay-1")
    assert not first.is_replay and again.is_replay and again.entry_id == first.entry_id
    assert db.session.get(Wallet, target.id).balance_minor == 400  # type: ignore[union-attr]
    assert order.status == OrderStatus.PAID
    with pytest.raises(ConflictError) as refused:
        pay_order_from_wallet(customer, order.id, "pay-2")  # another payment of a paid order
    assert refused.value.code == "order_not_open"
