"""A client's debit text is a memo: whatever it says ("refund 12", "payment 5", "dispute
2"), no later decision on one of our movements reads it as that movement's posting.
Each decision moves exactly what its own movement took or credited, and the audit
catches a posting planted on the wrong movement."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import Engine, select, update

from extensions import db
from models import (
    AdminUser,
    Dispute,
    DisputeStatus,
    LedgerEntry,
    Payment,
    PaymentStatus,
    RefundStatus,
    SourceKind,
    TransitionSource,
    Wallet,
)
from services.backoffice import actions
from services.disputes.state import move_dispute
from services.payments.state import move
from services.refunds.state import move_refund, take_from_wallet
from services.wallet import ledger
from services.wallet.audit import audit_wallets
from tests.admin_support import make_admin
from tests.factories import make_dispute, make_refund
from tests.helpers import charged, committed_topup

# What the customer writes as the debit's reference: {refund}, {payment} and {dispute}
# are the ids of our own movements on the same top-up, which the customer can read.
MEMOS = ("refund {refund}", "payment {payment}", "dispute {dispute}", "order 1", "anything")


def _topup(app: Flask) -> tuple[Payment, Wallet]:
    """A charged 20.00 top-up in a wallet that also holds 30.00 of other money."""
    payment_id = charged(app, committed_topup(app, 2000))
    payment = db.session.get_one(Payment, payment_id)
    assert payment.wallet_id is not None
    wallet = db.session.get_one(Wallet, payment.wallet_id)
    ledger.credit(wallet, 3000, f"other-money-{wallet.id}")
    return payment, wallet


def _balance(wallet_id: int) -> int:
    return db.session.get_one(Wallet, wallet_id, populate_existing=True).balance_minor


def _debit(wallet: Wallet, amount_minor: int, memo: str) -> None:
    ledger.debit(wallet, amount_minor, str(uuid.uuid4()), memo=memo)


def _dispute_move(payment_id: int, dispute_id: int, to: DisputeStatus) -> None:
    dispute = db.session.get_one(Dispute, dispute_id)
    payment = db.session.get_one(Payment, payment_id)
    assert move_dispute(dispute, payment, to, source=TransitionSource.ADMIN, reason="t", actor="a")
    db.session.commit()


@pytest.mark.parametrize("memo", MEMOS)
def test_a_refund_that_fails_gives_back_only_what_it_took(
    app: Flask, sandbox: Any, memo: str
) -> None:
    with app.app_context():
        payment, wallet = _topup(app)
        refund = make_refund(payment, amount_minor=2000)
        take_from_wallet(refund, payment)
        assert move_refund(refund, RefundStatus.SUCCEEDED, source=TransitionSource.REFUND)
        dispute = make_dispute(payment, DisputeStatus.WARNING_CLOSED)
        db.session.commit()
        assert _balance(wallet.id) == 3000
        ids = {"refund": refund.id, "payment": payment.id, "dispute": dispute.id}
        _debit(wallet, 3000, memo.format(**ids))  # the customer spends the rest
        assert move_refund(refund, RefundStatus.FAILED, source=TransitionSource.WEBHOOK)
        db.session.commit()
        assert _balance(wallet.id) == 2000  # the 20.00 it took, never 50.00
        assert audit_wallets().mismatches == []


@pytest.mark.parametrize("memo", MEMOS)
def test_a_lost_then_won_chargeback_moves_exactly_the_top_up(
    app: Flask, sandbox: Any, memo: str
) -> None:
    with app.app_context():
        payment, wallet = _topup(app)
        dispute = make_dispute(payment, DisputeStatus.WARNING_NEEDS_RESPONSE)
        refund = make_refund(payment, RefundStatus.FAILED, amount_minor=100)  # took nothing
        db.session.commit()
        ids = {"refund": refund.id, "payment": payment.id, "dispute": dispute.id}
        _debit(wallet, 1000, memo.format(**ids))
        assert _balance(wallet.id) == 4000
        _dispute_move(payment.id, dispute.id, DisputeStatus.NEEDS_RESPONSE)
        assert _balance(wallet.id) == 2000  # the whole 20.00 the top-up still holds
        _debit(wallet, 2000, memo.format(**ids))  # spent again, under the same text
        _dispute_move(payment.id, dispute.id, DisputeStatus.WON)
        assert _balance(wallet.id) == 2000  # exactly what the chargeback took
        assert audit_wallets().mismatches == []


@pytest.mark.parametrize("memo", MEMOS)
def test_an_admins_failed_decision_takes_back_what_the_top_up_still_holds(
    app: Flask, sandbox: Any, memo: str
) -> None:
    make_admin(app)
    with app.app_context():
        payment, wallet = _topup(app)
        dispute = make_dispute(payment, DisputeStatus.WARNING_CLOSED)
        refund = make_refund(payment, RefundStatus.FAILED, amount_minor=100)
        db.session.commit()
        ids = {"refund": refund.id, "payment": payment.id, "dispute": dispute.id}
        _debit(wallet, 1000, memo.format(**ids))
        move(payment, PaymentStatus.NEEDS_REVIEW, source=TransitionSource.WEBHOOK, reason="x")
        db.session.commit()
        admin = db.session.scalars(select(AdminUser)).one()
        said = actions.resolve(payment.id, "failed", "the bank says it never paid", admin)
        assert "€20.00 taken back" in said
        assert _balance(wallet.id) == 2000  # 40.00 less the top-up's 20.00, no more
        assert audit_wallets().mismatches == []


def test_the_audit_catches_a_posting_planted_on_another_movement(
    app: Flask, sandbox: Any, owner_engine: Engine
) -> None:
    with app.app_context():
        payment, _ = _topup(app)
        refund = make_refund(payment, amount_minor=500)
        take_from_wallet(refund, payment)
        assert move_refund(refund, RefundStatus.SUCCEEDED, source=TransitionSource.REFUND)
        db.session.commit()
        assert audit_wallets().mismatches == []
        # The refund's posting re-labelled as the top-up's own by the database's owner
        # (the app's role may not): the sums no longer agree.
        with owner_engine.begin() as conn:
            conn.execute(
                update(LedgerEntry)
                .where(LedgerEntry.source_kind == SourceKind.REFUND)
                .values(source_kind=SourceKind.PAYMENT, source_id=payment.id, kind="reversal")
            )
        problems = audit_wallets().mismatches
        assert any(f"refund {refund.id}" in p for p in problems), problems
        assert any(f"top-up payment {payment.id}" in p for p in problems), problems


def test_the_audit_catches_a_posting_on_another_wallet(
    app: Flask, sandbox: Any, owner_engine: Engine
) -> None:
    with app.app_context():
        payment, _ = _topup(app)
        _, other = _topup(app)
        db.session.commit()
        with owner_engine.begin() as conn:
            conn.execute(
                update(LedgerEntry)
                .where(LedgerEntry.source_kind == SourceKind.PAYMENT)
                .where(LedgerEntry.source_id == payment.id)
                .values(wallet_id=other.id)
            )
        problems = audit_wallets().mismatches
        assert any(f"of payment {payment.id} is on wallet {other.id}" in p for p in problems), (
            problems
        )
