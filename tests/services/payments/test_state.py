"""One state machine: allowed moves, no regressions, conflicts go to review."""

from __future__ import annotations

import pytest
from flask import Flask
from sqlalchemy import select

from extensions import db
from models import (
    LedgerEntry,
    Order,
    OrderStatus,
    Payment,
    PaymentPurpose,
    PaymentStatus,
    PaymentTransition,
    TransitionSource,
    Wallet,
)
from services.movements.locks import lock_payment
from services.payments.state import move
from tests.factories import make_customer, make_order, make_payment, make_wallet

S = PaymentStatus
SRC = TransitionSource


def fresh(app_ctx: Flask, status: PaymentStatus = S.PENDING) -> Payment:
    payment = make_payment(make_order(make_customer()))
    payment.status = status
    db.session.commit()
    locked = lock_payment(payment.id)
    assert locked is not None
    return locked


def transitions(payment: Payment) -> list[tuple[str | None, str, str]]:
    rows = db.session.scalars(
        select(PaymentTransition)
        .where(PaymentTransition.payment_id == payment.id)
        .order_by(PaymentTransition.id)
    ).all()
    return [
        (r.from_status.value if r.from_status else None, r.to_status.value, r.source.value)
        for r in rows
    ]


@pytest.mark.parametrize(
    ("start", "to", "source", "expected", "is_moved"),
    [
        (S.PENDING, S.SUCCEEDED, SRC.CHARGE, S.SUCCEEDED, True),
        (S.PENDING, S.UNKNOWN, SRC.CHARGE, S.UNKNOWN, True),
        (S.UNKNOWN, S.FAILED, SRC.RECONCILE, S.FAILED, True),
        (S.SUCCEEDED, S.PENDING, SRC.WEBHOOK, S.SUCCEEDED, False),  # no regression
        (S.SUCCEEDED, S.UNKNOWN, SRC.CHARGE, S.SUCCEEDED, False),
        (S.FAILED, S.UNKNOWN, SRC.RECONCILE, S.FAILED, False),
        (S.SUCCEEDED, S.FAILED, SRC.WEBHOOK, S.NEEDS_REVIEW, True),  # conflict: a person decides
        (S.FAILED, S.SUCCEEDED, SRC.WEBHOOK, S.NEEDS_REVIEW, True),
        (S.NEEDS_REVIEW, S.SUCCEEDED, SRC.WEBHOOK, S.NEEDS_REVIEW, False),
        (S.NEEDS_REVIEW, S.FAILED, SRC.ADMIN, S.FAILED, True),
        (S.SUCCEEDED, S.SUCCEEDED, SRC.WEBHOOK, S.SUCCEEDED, False),
    ],
)
def test_transition_table(
    app_ctx: Flask,
    start: PaymentStatus,
    to: PaymentStatus,
    source: TransitionSource,
    expected: PaymentStatus,
    is_moved: bool,
) -> None:
    payment = fresh(app_ctx, start)
    assert move(payment, to, source=source, reason="test") is is_moved
    db.session.commit()
    assert db.session.get(Payment, payment.id).status == expected  # type: ignore[union-attr]


def test_every_move_is_recorded_with_its_source(app_ctx: Flask) -> None:
    payment = fresh(app_ctx)
    move(payment, S.UNKNOWN, source=SRC.CHARGE, reason="read timeout")
    move(payment, S.SUCCEEDED, source=SRC.RECONCILE, reason="replayed")
    move(payment, S.FAILED, source=SRC.WEBHOOK, reason="late event")
    db.session.commit()
    assert transitions(payment) == [
        ("pending", "unknown", "charge"),
        ("unknown", "succeeded", "reconcile"),
        ("succeeded", "needs_review", "webhook"),
    ]
    last = db.session.scalars(
        select(PaymentTransition).order_by(PaymentTransition.id.desc())
    ).first()
    assert last is not None and "was succeeded" in last.reason and "reports failed" in last.reason


def test_success_pays_the_order_in_the_same_transaction(app_ctx: Flask) -> None:
    payment = fresh(app_ctx)
    move(payment, S.SUCCEEDED, source=SRC.CHARGE)
    db.session.commit()
    order = db.session.get(Order, payment.order_id)
    assert order is not None and order.status == OrderStatus.PAID and order.paid_at


def test_success_for_an_already_paid_order_needs_review(app_ctx: Flask) -> None:
    payment = fresh(app_ctx)
    order = db.session.get(Order, payment.order_id)
    assert order is not None
    order.status = OrderStatus.PAID
    move(payment, S.SUCCEEDED, source=SRC.WEBHOOK)
    db.session.commit()
    assert db.session.get(Payment, payment.id).status == S.NEEDS_REVIEW  # type: ignore[union-attr]


def test_topup_credits_the_wallet_exactly_once(app_ctx: Flask) -> None:
    import uuid

    customer = make_customer()
    wallet = make_wallet(customer)
    payment = Payment(
        idempotency_key=uuid.uuid4(),
        customer_id=customer.id,
        purpose=PaymentPurpose.WALLET_TOPUP,
        wallet_id=wallet.id,
        provider="stripe",
        amount_minor=500,
        currency="EUR",
    )
    db.session.add(payment)
    db.session.commit()
    move(payment, S.SUCCEEDED, source=SRC.CHARGE)
    db.session.commit()
    # A conflicting report, then an admin confirming success: no second credit.
    move(payment, S.FAILED, source=SRC.WEBHOOK)
    move(payment, S.SUCCEEDED, source=SRC.ADMIN, reason="confirmed at provider", actor="ops")
    db.session.commit()
    assert db.session.get(Wallet, wallet.id).balance_minor == 500  # type: ignore[union-attr]
    assert db.session.query(LedgerEntry).count() == 1


def test_a_transition_is_logged_only_once_committed(
    app_ctx: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="services.movements.machine")

    def lines() -> list[str]:
        return [r.getMessage() for r in caplog.records if "-> failed" in r.getMessage()]

    payment = fresh(app_ctx)
    move(payment, S.FAILED, source=SRC.CHARGE, reason="declined")
    assert lines() == []  # not yet: the transaction may still roll back
    db.session.rollback()
    assert lines() == []  # and it did: no line for a change that never happened
    payment = lock_payment(payment.id)  # type: ignore[assignment]
    move(payment, S.FAILED, source=SRC.CHARGE, reason="declined")
    db.session.commit()
    assert len(lines()) == 1 and "pending -> failed by charge: declined" in lines()[0]
