"""One state machine: allowed moves, no regressions, conflicts go to review."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from sqlalchemy import func, select
from sqlalchemy.event import listen, remove

from extensions import db
from models import (
    Customer,
    EmailKind,
    LedgerEntry,
    Order,
    OrderStatus,
    OutboxMessage,
    Payment,
    PaymentStatus,
    PaymentTransition,
    TransitionSource,
    Wallet,
)
from services.movements.locks import lock_payment
from services.payments.state import log_context, move, note, reverse_effect
from services.wallet import ledger
from settings import settings
from tests.factories import (
    make_wallet,
)
from tests.helpers import got
from tests.payment_support import committed_topup_row, locked_order_payment

S = PaymentStatus
SRC = TransitionSource


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
    payment = locked_order_payment(start)
    assert move(payment, to, source=source, reason="test") is is_moved
    db.session.commit()
    assert got(Payment, payment.id).status == expected


def test_every_move_is_recorded_with_its_source(app_ctx: Flask) -> None:
    payment = locked_order_payment()
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
    payment = locked_order_payment()
    move(payment, S.SUCCEEDED, source=SRC.CHARGE)
    db.session.commit()
    order = db.session.get(Order, payment.order_id)
    assert order is not None and order.status == OrderStatus.PAID and order.paid_at


def test_success_for_an_already_paid_order_needs_review(app_ctx: Flask) -> None:
    payment = locked_order_payment()
    order = db.session.get(Order, payment.order_id)
    assert order is not None
    order.status = OrderStatus.PAID
    move(payment, S.SUCCEEDED, source=SRC.WEBHOOK)
    db.session.commit()
    assert got(Payment, payment.id).status == S.NEEDS_REVIEW


def test_topup_credits_the_wallet_exactly_once(app_ctx: Flask) -> None:
    payment = committed_topup_row(500)
    wallet = db.session.get(Wallet, payment.wallet_id)
    assert wallet is not None
    move(payment, S.SUCCEEDED, source=SRC.CHARGE)
    db.session.commit()
    # A conflicting report, then an admin confirming success: no second credit.
    move(payment, S.FAILED, source=SRC.WEBHOOK)
    move(payment, S.SUCCEEDED, source=SRC.ADMIN, reason="confirmed at provider", actor="ops")
    db.session.commit()
    assert got(Wallet, wallet.id).balance_minor == 500
    assert db.session.query(LedgerEntry).count() == 1


def test_a_transition_is_logged_only_once_committed(
    app_ctx: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="services.movements.machine")

    def lines() -> list[str]:
        return [r.getMessage() for r in caplog.records if "-> failed" in r.getMessage()]

    payment = locked_order_payment()
    move(payment, S.FAILED, source=SRC.CHARGE, reason="declined")
    assert lines() == []  # not yet: the transaction may still roll back
    db.session.rollback()
    assert lines() == []  # and it did: no line for a change that never happened
    payment = lock_payment(payment.id)  # type: ignore[assignment]  # the payment exists (made above)
    move(payment, S.FAILED, source=SRC.CHARGE, reason="declined")
    db.session.commit()
    assert len(lines()) == 1 and "pending -> failed by charge: declined" in lines()[0]


def test_success_for_an_already_paid_order_says_why_it_needs_review(app_ctx: Flask) -> None:
    payment = locked_order_payment()
    order = db.session.get(Order, payment.order_id)
    assert order is not None
    order.status = OrderStatus.PAID
    move(payment, S.SUCCEEDED, source=SRC.WEBHOOK)
    db.session.commit()
    assert transitions(payment)[-1] == ("succeeded", "needs_review", "webhook")
    last = db.session.scalars(
        select(PaymentTransition).order_by(PaymentTransition.id.desc())
    ).first()
    assert last is not None and last.reason == f"order {order.id} was already paid"
    assert not payment.is_effect_applied


def test_a_note_records_a_fact_without_moving(app_ctx: Flask) -> None:
    payment = locked_order_payment(S.UNKNOWN)
    note(payment, source=SRC.ADMIN, reason="rerouted", actor="ops@x")
    db.session.commit()
    [noted] = db.session.scalars(
        select(PaymentTransition).where(PaymentTransition.payment_id == payment.id)
    ).all()
    assert (noted.from_status, noted.to_status, noted.source, noted.reason, noted.actor) == (
        S.UNKNOWN,
        S.UNKNOWN,
        SRC.ADMIN,
        "rerouted",
        "ops@x",
    )
    assert payment.status == S.UNKNOWN


@pytest.mark.parametrize(
    ("to", "kind", "is_to_customer"),
    [
        (S.SUCCEEDED, EmailKind.RECEIPT, True),
        (S.FAILED, EmailKind.PAYMENT_FAILED, True),
        (S.NEEDS_REVIEW, EmailKind.REVIEW_ALERT, False),
        (S.UNKNOWN, None, False),
    ],
)
def test_the_new_state_writes_its_email_to_whom_it_concerns(
    app_ctx: Flask, to: PaymentStatus, kind: EmailKind | None, is_to_customer: bool
) -> None:
    payment = locked_order_payment()
    move(payment, to, source=SRC.ADMIN if to == S.NEEDS_REVIEW else SRC.CHARGE, reason="r")
    db.session.commit()
    emails = db.session.execute(
        select(OutboxMessage.kind, OutboxMessage.subject_id, OutboxMessage.recipient)
    ).all()
    customer = db.session.get(Customer, payment.customer_id)
    assert customer is not None
    recipient = customer.email if is_to_customer else settings().email.admin_alert_email
    assert emails == ([] if kind is None else [(kind, payment.id, recipient)])


def test_every_line_about_a_payment_names_it_its_key_and_provider(app_ctx: Flask) -> None:
    payment = locked_order_payment()
    assert log_context(payment) == {
        "payment_id": payment.id,
        "idempotency_key": str(payment.idempotency_key),
        "provider": "stripe",
    }


def test_a_move_records_who_made_it_and_no_reason_when_none_was_given(app_ctx: Flask) -> None:
    payment = locked_order_payment(S.NEEDS_REVIEW)
    move(payment, S.FAILED, source=SRC.ADMIN, actor="ops@x")
    db.session.commit()
    [moved] = db.session.scalars(
        select(PaymentTransition).where(PaymentTransition.payment_id == payment.id)
    ).all()
    assert (moved.actor, moved.reason) == ("ops@x", "")


def test_a_topup_credits_only_a_wallet_of_its_currency(app_ctx: Flask) -> None:
    payment = committed_topup_row()
    payment.currency = "USD"  # not the EUR wallet's: a mismatch never moves money
    assert move(payment, S.SUCCEEDED, source=SRC.CHARGE)
    assert (payment.status, payment.is_effect_applied) == (S.NEEDS_REVIEW, False)
    assert db.session.scalars(select(PaymentTransition.reason)).all()[-1] == (
        f"its wallet {payment.wallet_id} could not be credited in USD"
    )
    assert db.session.scalar(select(func.count(LedgerEntry.id))) == 0
    db.session.rollback()
    applied = committed_topup_row()
    move(applied, S.SUCCEEDED, source=SRC.CHARGE)
    applied.currency = "USD"
    with pytest.raises(ledger.CurrencyMismatchError):
        reverse_effect(applied)


def test_an_order_payment_pays_its_order_even_with_a_wallet_named(app_ctx: Flask) -> None:
    payment = locked_order_payment()
    named = make_wallet(db.session.get(Customer, payment.customer_id))  # type: ignore[arg-type]  # the customer exists (made above)
    payment.wallet_id = named.id  # the schema allows it; the purpose decides
    move(payment, S.SUCCEEDED, source=SRC.CHARGE)
    order = db.session.get(Order, payment.order_id)
    assert order is not None and order.status == OrderStatus.PAID
    assert named.balance_minor == 0
    assert reverse_effect(payment) == f"order {order.id} open again"
    assert order.status == OrderStatus.OPEN


def test_a_success_writes_its_receipt_in_its_one_statement(app_ctx: Flask) -> None:
    """The success's statement (services/payments/settling.py) writes the receipt: no
    second INSERT into the outbox that could only find it there."""
    payment = locked_order_payment()
    outbox_writes: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        if "INSERT INTO outbox" in statement:
            outbox_writes.append(statement)

    listen(db.engine, "before_cursor_execute", seen)
    try:
        assert move(payment, S.SUCCEEDED, source=SRC.WEBHOOK, reason="evt_1")
    finally:
        remove(db.engine, "before_cursor_execute", seen)
    db.session.commit()
    assert len(outbox_writes) == 1 and "UPDATE payments" in outbox_writes[0]
    kinds = db.session.scalars(select(OutboxMessage.kind)).all()
    assert kinds == [EmailKind.RECEIPT]
