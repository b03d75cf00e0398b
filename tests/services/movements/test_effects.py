"""Postings: a movement takes at most what the wallet holds, gives back exactly what its
postings took (read from the ledger), and a repeat of either moves nothing."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from flask import Flask

from extensions import db
from models import LedgerKind, OrderStatus, RefundStatus, Wallet
from services.movements import effects
from services.wallet import ledger
from tests.factories import (
    make_customer,
    make_dispute,
    make_order,
    make_payment,
    make_refund,
    make_wallet,
)


def _wallet(app: Flask, balance: int) -> int:
    with app.app_context():
        wallet = make_wallet(make_customer())
        db.session.commit()
        ledger.credit(wallet, balance, f"seed-{wallet.id}")
        return wallet.id


def _balance(wallet_id: int) -> int:
    wallet = db.session.get(Wallet, wallet_id, populate_existing=True)
    assert wallet is not None
    return wallet.balance_minor


def test_take_never_more_than_the_wallet_holds_and_give_back_only_what_was_taken(
    app_ctx: Flask,
) -> None:
    wallet_id = _wallet(app_ctx, 300)
    args: Any = {"kind": LedgerKind.DISPUTE, "reference": "dispute 1"}
    assert effects.take(wallet_id, 500, "EUR", operation_id="d1:take", **args) == 300
    assert _balance(wallet_id) == 0 and effects.posted("dispute 1") == -300
    assert effects.take(wallet_id, 500, "EUR", operation_id="d1:take2", **args) == 0  # empty
    db.session.commit()
    assert effects.give_back(wallet_id, "EUR", operation_id="d1:back", **args) == 300
    assert _balance(wallet_id) == 300 and effects.posted("dispute 1") == 0
    # Nothing is out any more: a second decision gives nothing back.
    assert effects.give_back(wallet_id, "EUR", operation_id="d1:back2", **args) == 0
    db.session.commit()
    assert _balance(wallet_id) == 300


def test_a_repeated_posting_moves_nothing(app_ctx: Flask) -> None:
    wallet_id = _wallet(app_ctx, 1000)
    args: Any = {"kind": LedgerKind.DISPUTE, "reference": "dispute 2"}
    effects.take(wallet_id, 400, "EUR", operation_id="d2:take", **args)
    effects.take(wallet_id, 400, "EUR", operation_id="d2:take", **args)  # the same id
    db.session.commit()
    assert _balance(wallet_id) == 600 and effects.posted("dispute 2") == -400
    assert effects.posted("dispute 3") == 0  # another movement's postings are its own


# An order's status is read from what its movements applied, whatever order they came in.
APPLIED = ("paid", "refund 400", "refund 600", "dispute")


def _expected(applied: set[str]) -> OrderStatus:
    if "paid" not in applied:
        return OrderStatus.OPEN
    if "dispute" in applied:
        return OrderStatus.DISPUTED
    refunded = 400 * ("refund 400" in applied) + 600 * ("refund 600" in applied)
    return {0: OrderStatus.PAID, 1000: OrderStatus.REFUNDED}.get(
        refunded, OrderStatus.PARTIALLY_REFUNDED
    )


@pytest.mark.parametrize("sequence", list(itertools.permutations(APPLIED)))
def test_an_orders_status_follows_its_movements_in_any_order(
    app_ctx: Flask, sequence: tuple[str, ...]
) -> None:
    order = make_order(make_customer(), price_minor=1000)
    payment = make_payment(order)
    refunds = {
        f"refund {n}": make_refund(payment, RefundStatus.SUCCEEDED, amount_minor=n)
        for n in (400, 600)
    }
    dispute = make_dispute(payment)
    assert effects.settle_order(order) == OrderStatus.OPEN and order.paid_at is None
    applied: set[str] = set()
    for step in sequence:
        if step == "paid":
            payment.is_effect_applied = True
        elif step == "dispute":
            dispute.is_effect_applied = True
        else:
            refunds[step].is_effect_applied = True
        applied.add(step)
        # Before it is paid, a refund or a dispute changes nothing (the order stays open).
        assert effects.settle_order(order) == _expected(applied)
    assert order.status == OrderStatus.DISPUTED and order.paid_at is not None
    dispute.is_effect_applied = False  # won: the money came back
    assert effects.settle_order(order) == OrderStatus.REFUNDED
    payment.is_effect_applied = False  # reversed, yet refunded: a contradiction for a
    assert effects.settle_order(order) == OrderStatus.REFUNDED  # person, left as it is


def test_a_wallet_paid_order_and_a_reversed_payment(app_ctx: Flask) -> None:
    customer = make_customer()
    order = make_order(customer, price_minor=700)
    wallet = make_wallet(customer)
    ledger.credit(wallet, 700, f"seed-{wallet.id}")
    ledger.apply_movement(
        wallet.id,
        -700,
        "EUR",
        operation_id="pay-1",
        kind=LedgerKind.ORDER,
        reference=f"order {order.id}",
    )
    assert effects.wallet_paid(order.id) == 700
    assert effects.settle_order(order) == OrderStatus.PAID
    card = make_order(customer)
    payment = make_payment(card)
    payment.is_effect_applied = True
    assert effects.settle_order(card) == OrderStatus.PAID
    payment.is_effect_applied = False  # an admin decided it failed after all
    assert effects.settle_order(card) == OrderStatus.OPEN and card.paid_at is None
