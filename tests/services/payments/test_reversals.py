"""Undoing a payment's success (an admin decided it failed): the wallet gives back only
what the top-up's credit still holds, the order opens again unless the wallet paid it
too, and the books post the mirror of the success."""

from __future__ import annotations

from flask import Flask
from sqlalchemy import select

from extensions import db
from models import (
    Account,
    Customer,
    LedgerEntry,
    LedgerKind,
    Order,
    OrderStatus,
    Payment,
    PaymentStatus,
    Source,
    SourceKind,
    TransitionSource,
    Wallet,
)
from services.books import journal
from services.movements.locks import lock_payment
from services.payments.state import move, reverse_effect
from services.wallet import ledger
from tests.factories import make_refund, make_wallet
from tests.helpers import got
from tests.payment_support import committed_topup_row, locked_order_payment

S = PaymentStatus
SRC = TransitionSource


def _refunded(payment: Payment, amount_minor: int) -> None:
    """A refund of the top-up that took `amount_minor` out of its wallet."""
    refund = make_refund(payment, amount_minor=amount_minor)
    assert payment.wallet_id is not None
    ledger.apply_movement(
        payment.wallet_id,
        -amount_minor,
        "EUR",
        operation_id=f"refund-{refund.id}",
        kind=LedgerKind.REFUND,
        source=Source(SourceKind.REFUND, refund.id),
    )


def _entries(payment: Payment) -> list[tuple[str, int, str, str]]:
    return [
        (e.operation_id, e.amount_minor, e.kind.value, str(e.source))
        for e in db.session.scalars(
            select(LedgerEntry)
            .where(LedgerEntry.wallet_id == payment.wallet_id)
            .order_by(LedgerEntry.id)
        )
    ]


def test_a_reversed_topup_takes_its_credit_back_and_a_new_success_is_a_new_credit(
    app_ctx: Flask,
) -> None:
    payment = committed_topup_row()
    move(payment, S.SUCCEEDED, source=SRC.CHARGE)
    assert reverse_effect(payment) == "wallet credit of €5.00 taken back"
    assert (payment.is_effect_applied, payment.effect_reversals) == (False, 1)
    assert reverse_effect(payment) is None  # nothing applied: nothing to undo
    move(payment, S.NEEDS_REVIEW, source=SRC.ADMIN, reason="check")
    move(payment, S.SUCCEEDED, source=SRC.ADMIN, reason="it did succeed", actor="ops")
    assert reverse_effect(payment) == "wallet credit of €5.00 taken back"
    db.session.commit()
    ref = f"payment {payment.id}"
    assert _entries(payment) == [
        (f"topup:{payment.id}", 500, "topup", ref),
        (f"reversal:{payment.id}:1", -500, "reversal", ref),
        (f"topup:{payment.id}:2", 500, "topup", ref),
        (f"reversal:{payment.id}:2", -500, "reversal", ref),
    ]
    assert got(Wallet, payment.wallet_id).balance_minor == 0
    # The books: each success and each reversal, the mirror of the success it undid.
    assert payment.wallet_id is not None
    wallet, clearing = Account.wallet(payment.wallet_id), Account.clearing("stripe")
    credit, debit = (
        [(clearing, 500, "EUR"), (wallet, -500, "EUR")],
        [(wallet, 500, "EUR"), (clearing, -500, "EUR")],  # (the wallet's movement first)
    )
    assert journal.entries_of(Source(SourceKind.PAYMENT, payment.id)) == {
        "succeeded": credit,
        "reversed:1": debit,
        "succeeded:2": credit,
        "reversed:2": debit,
    }


def test_a_reversal_takes_back_only_what_the_topups_refunds_left(app_ctx: Flask) -> None:
    payment = committed_topup_row(800)
    move(payment, S.SUCCEEDED, source=SRC.CHARGE)
    _refunded(payment, 300)
    assert reverse_effect(payment) == (
        "wallet credit of €5.00 taken back (the rest, €3.00, was refunded or disputed already)"
    )
    assert got(Wallet, payment.wallet_id).balance_minor == 0
    spent = committed_topup_row(400)
    move(spent, S.SUCCEEDED, source=SRC.CHARGE)
    _refunded(spent, 400)
    entries = len(_entries(spent))
    assert reverse_effect(spent) == (
        "wallet credit of €0.00 taken back (the rest, €4.00, was refunded or disputed already)"
    )
    assert len(_entries(spent)) == entries  # nothing left to take: no entry


def test_a_reversed_order_payment_opens_its_order_again(app_ctx: Flask) -> None:
    payment = locked_order_payment()
    move(payment, S.SUCCEEDED, source=SRC.CHARGE)
    order = db.session.get(Order, payment.order_id)
    assert order is not None and order.status == OrderStatus.PAID
    assert reverse_effect(payment) == f"order {order.id} open again"
    assert (order.status, order.paid_at, payment.is_effect_applied) == (
        OrderStatus.OPEN,
        None,
        False,
    )


def test_reversing_a_payment_of_an_order_the_wallet_paid_too_undoes_nothing_on_it(
    app_ctx: Flask,
) -> None:
    payment = locked_order_payment()
    move(payment, S.SUCCEEDED, source=SRC.CHARGE)
    order = db.session.get(Order, payment.order_id)
    assert order is not None
    customer = db.session.get(Customer, payment.customer_id)
    assert customer is not None
    wallet = make_wallet(customer)
    ledger.credit(wallet, order.total_minor, "fund")
    ledger.apply_movement(
        wallet.id,
        -order.total_minor,
        "EUR",
        operation_id="paid-too",
        kind=LedgerKind.ORDER,
        source=Source(SourceKind.ORDER, order.id),
    )
    payment = lock_payment(payment.id)  # type: ignore[assignment]  # the payment exists (made above)
    assert reverse_effect(payment) is None  # still paid, by the wallet
    assert order.status == OrderStatus.PAID and not payment.is_effect_applied


def test_a_reversal_takes_back_the_last_minor_unit(app_ctx: Flask) -> None:
    payment = committed_topup_row(500)
    move(payment, S.SUCCEEDED, source=SRC.CHARGE)
    _refunded(payment, 499)
    assert reverse_effect(payment) == (
        "wallet credit of €0.01 taken back (the rest, €4.99, was refunded or disputed already)"
    )
    assert _entries(payment)[-1] == (
        f"reversal:{payment.id}:1",
        -1,
        "reversal",
        f"payment {payment.id}",
    )
