"""A dispute's effect follows its status: withdrawn while the money is out, given back
when it is won, kept as it is in review; an admin's decision of a review settles it."""

from __future__ import annotations

from typing import Any

from flask import Flask
from sqlalchemy import select

from extensions import db
from models import (
    Account,
    AdminUser,
    Dispute,
    DisputeStatus,
    Order,
    OrderStatus,
    Payment,
    PaymentStatus,
    RefundStatus,
    Source,
    SourceKind,
    TransitionSource,
    Wallet,
)
from services.backoffice import actions
from services.books import journal
from services.disputes.state import move_dispute
from services.payments.state import move
from services.wallet import ledger
from services.wallet.audit import audit_wallets
from tests.admin_support import make_admin
from tests.factories import make_customer, make_dispute, make_order, make_payment, make_refund
from tests.helpers import charged, committed_topup


def _disputed(app_ctx: Flask, order_status: OrderStatus = OrderStatus.PAID) -> Dispute:
    payment = make_payment(make_order(make_customer()))
    order = db.session.get(Order, payment.order_id)
    assert order is not None
    order.status = order_status
    payment.is_effect_applied = True  # it paid the order (the order's status reads it)
    return make_dispute(payment, DisputeStatus.WARNING_NEEDS_RESPONSE)


def _order_status(dispute: Dispute) -> OrderStatus:
    payment = db.session.get(Payment, dispute.payment_id)
    assert payment is not None
    order = db.session.get(Order, payment.order_id)
    assert order is not None
    return order.status


def _move(
    dispute: Dispute, to: DisputeStatus, source: TransitionSource = TransitionSource.WEBHOOK
) -> bool:
    payment = db.session.get(Payment, dispute.payment_id)
    assert payment is not None
    return move_dispute(dispute, payment, to, source=source, reason="test", actor="t")


def test_an_inquiry_escalated_to_a_chargeback_withdraws_and_winning_gives_back(
    app_ctx: Flask,
) -> None:
    dispute = _disputed(app_ctx)
    assert _move(dispute, DisputeStatus.WARNING_UNDER_REVIEW)
    assert not dispute.is_effect_applied and _order_status(dispute) == OrderStatus.PAID
    assert _move(dispute, DisputeStatus.NEEDS_RESPONSE)
    assert dispute.is_effect_applied and _order_status(dispute) == OrderStatus.DISPUTED
    assert _move(dispute, DisputeStatus.WON)
    assert not dispute.is_effect_applied and _order_status(dispute) == OrderStatus.PAID
    # The books: the provider took the amount from what it holds for us, then gave it back.
    amount, currency = dispute.amount_minor, dispute.currency
    assert journal.entries_of(Source(SourceKind.DISPUTE, dispute.id)) == {
        "withdrawn:1": [("disputes", amount, currency), ("clearing:stripe", -amount, currency)],
        "reinstated:1": [("disputes", -amount, currency), ("clearing:stripe", amount, currency)],
    }


def test_a_lost_chargeback_stays_in_the_books_as_the_disputes_loss(app_ctx: Flask) -> None:
    dispute = _disputed(app_ctx)
    _move(dispute, DisputeStatus.NEEDS_RESPONSE)
    _move(dispute, DisputeStatus.LOST)
    assert list(journal.entries_of(Source(SourceKind.DISPUTE, dispute.id))) == ["withdrawn:1"]
    db.session.commit()  # the database's balance check passes
    assert journal.balances(Account.DISPUTES) == {("disputes", "EUR"): dispute.amount_minor}


def test_a_partly_refunded_order_won_back_says_so_again(app_ctx: Flask) -> None:
    dispute = _disputed(app_ctx, OrderStatus.PARTIALLY_REFUNDED)
    payment = db.session.get(Payment, dispute.payment_id)
    assert payment is not None
    make_refund(payment, RefundStatus.SUCCEEDED, amount_minor=400).is_effect_applied = True
    _move(dispute, DisputeStatus.NEEDS_RESPONSE)
    assert _order_status(dispute) == OrderStatus.DISPUTED
    _move(dispute, DisputeStatus.WON)
    assert _order_status(dispute) == OrderStatus.PARTIALLY_REFUNDED


def test_review_keeps_the_effect_and_the_admins_decision_settles_it(app_ctx: Flask) -> None:
    dispute = _disputed(app_ctx)
    _move(dispute, DisputeStatus.NEEDS_RESPONSE)
    assert _move(dispute, DisputeStatus.NEEDS_REVIEW)
    assert dispute.is_effect_applied and _order_status(dispute) == OrderStatus.DISPUTED
    assert not _move(dispute, DisputeStatus.WON)  # the provider's word waits for a person
    assert _move(dispute, DisputeStatus.WON, TransitionSource.ADMIN)
    assert not dispute.is_effect_applied and _order_status(dispute) == OrderStatus.PAID


def _topup_with_other_money(app: Flask) -> tuple[int, int]:
    """(payment id, wallet id): a charged 7.00 top-up in a wallet that also holds 10.00
    of other money."""
    payment_id = charged(app, committed_topup(app, 700))
    with app.app_context():
        payment = db.session.get(Payment, payment_id)
        assert payment is not None and payment.wallet_id is not None
        wallet = db.session.get(Wallet, payment.wallet_id)
        assert wallet is not None
        ledger.credit(wallet, 1000, f"other-money-{wallet.id}")
        return payment_id, wallet.id


def _failed_by_an_admin(app: Flask, payment_id: int) -> str:
    """The top-up sent to review, then decided failed by an admin (services/backoffice)."""
    make_admin(app)
    with app.app_context():
        payment = db.session.get(Payment, payment_id)
        assert payment is not None
        move(payment, PaymentStatus.NEEDS_REVIEW, source=TransitionSource.WEBHOOK, reason="x")
        db.session.commit()
        admin = db.session.scalars(select(AdminUser)).one()
        return actions.resolve(payment_id, "failed", "the bank says it never paid", admin)


def _balance(wallet_id: int) -> int:
    wallet = db.session.get(Wallet, wallet_id, populate_existing=True)
    assert wallet is not None
    return wallet.balance_minor


def test_a_chargeback_then_a_reversal_never_take_the_top_up_twice(app: Flask, sandbox: Any) -> None:
    payment_id, wallet_id = _topup_with_other_money(app)
    with app.app_context():
        payment = db.session.get(Payment, payment_id)
        assert payment is not None
        dispute = make_dispute(payment, DisputeStatus.WARNING_NEEDS_RESPONSE)
        _move(dispute, DisputeStatus.NEEDS_RESPONSE)
        assert dispute.withdrawn_minor == 700 and _balance(wallet_id) == 1000
        db.session.commit()
        assert journal.entries_of(Source(SourceKind.DISPUTE, dispute.id)) == {
            "withdrawn:1": [(f"wallet:{wallet_id}", 700, "EUR"), ("clearing:stripe", -700, "EUR")]
        }
    said = _failed_by_an_admin(app, payment_id)  # an admin then decides the top-up failed
    assert "€0.00 taken back" in said and "refunded or disputed already" in said
    with app.app_context():
        assert _balance(wallet_id) == 1000  # the other money stays
        assert audit_wallets().mismatches == []


def test_a_reversal_then_a_chargeback_takes_nothing_of_the_other_money(
    app: Flask, sandbox: Any
) -> None:
    payment_id, wallet_id = _topup_with_other_money(app)
    assert "€7.00 taken back" in _failed_by_an_admin(app, payment_id)
    with app.app_context():
        payment = db.session.get(Payment, payment_id)
        assert payment is not None
        assert _balance(wallet_id) == 1000
        dispute = make_dispute(payment, DisputeStatus.WARNING_NEEDS_RESPONSE)
        _move(dispute, DisputeStatus.NEEDS_RESPONSE)
        db.session.commit()
        assert dispute.withdrawn_minor == 0 and _balance(wallet_id) == 1000
        assert audit_wallets().mismatches == []
        # Nothing left of the top-up's credit: the whole amount is the dispute's loss.
        assert journal.entries_of(Source(SourceKind.DISPUTE, dispute.id)) == {
            "withdrawn:1": [("disputes", 700, "EUR"), ("clearing:stripe", -700, "EUR")]
        }
        assert journal.trial_balance() == {"EUR": 0}


def test_a_top_up_chargeback_won_gives_the_wallet_back_in_the_books_too(
    app: Flask, sandbox: Any
) -> None:
    payment_id, wallet_id = _topup_with_other_money(app)
    with app.app_context():
        payment = db.session.get(Payment, payment_id)
        assert payment is not None
        dispute = make_dispute(payment, DisputeStatus.WARNING_NEEDS_RESPONSE)
        _move(dispute, DisputeStatus.NEEDS_RESPONSE)
        _move(dispute, DisputeStatus.WON)
        db.session.commit()  # each wallet movement with its posting, checked at the commit
        wallet = f"wallet:{wallet_id}"
        assert journal.entries_of(Source(SourceKind.DISPUTE, dispute.id))["reinstated:1"] == [
            (wallet, -700, "EUR"),
            ("clearing:stripe", 700, "EUR"),
        ]
        assert _balance(wallet_id) == 1700
        assert journal.balances(wallet) == {(wallet, "EUR"): -1700}
        assert audit_wallets().mismatches == []
