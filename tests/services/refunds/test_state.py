"""The refund state machine: final states never regress, a conflicting report goes to
review, which only an admin leaves; the ledger follows the state."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import (
    Account,
    EmailKind,
    OutboxMessage,
    Payment,
    PaymentStatus,
    Refund,
    RefundStatus,
    RefundTransition,
    Source,
    SourceKind,
    TransitionSource,
    Wallet,
)
from services.books import journal, rebuild
from services.notifications.rendering import render_email
from services.payments.state import move
from services.refunds.state import move_refund, take_from_wallet
from tests.factories import make_customer, make_order, make_payment, make_refund, make_topup
from tests.helpers import got


def _refund(app_ctx: Flask) -> Refund:
    payment = make_payment(make_order(make_customer()))
    refund = make_refund(payment, RefundStatus.UNKNOWN)
    return refund


def test_final_states_never_regress_and_conflicts_go_to_review(app_ctx: Flask) -> None:
    refund = _refund(app_ctx)
    assert move_refund(refund, RefundStatus.SUCCEEDED, source=TransitionSource.RECONCILE)
    assert not move_refund(refund, RefundStatus.UNKNOWN, source=TransitionSource.CHARGE)
    # Our own send's late "refused" contradicts the provider's success: a person decides.
    assert move_refund(refund, RefundStatus.FAILED, source=TransitionSource.REFUND)
    assert refund.status == RefundStatus.NEEDS_REVIEW  # both facts kept for a person
    assert not move_refund(refund, RefundStatus.SUCCEEDED, source=TransitionSource.WEBHOOK)
    assert refund.status == RefundStatus.NEEDS_REVIEW
    assert move_refund(refund, RefundStatus.SUCCEEDED, source=TransitionSource.ADMIN, actor="a")
    db.session.flush()
    reasons = [t.reason for t in db.session.query(RefundTransition).order_by(RefundTransition.id)]
    assert any(
        r.startswith("conflict: refund was succeeded, refund reports failed") for r in reasons
    )
    assert any(r.startswith("reported succeeded") for r in reasons)


def test_the_provider_may_fail_a_refund_it_reported_succeeded(app_ctx: Flask) -> None:
    """Stripe documents succeeded -> failed (refund.failed): the provider's word, by event
    or lookup, fails the refund; a stale "succeeded" after that changes nothing."""
    refund = _refund(app_ctx)
    assert move_refund(refund, RefundStatus.SUCCEEDED, source=TransitionSource.REFUND)
    assert move_refund(refund, RefundStatus.FAILED, source=TransitionSource.WEBHOOK)
    assert refund.status == RefundStatus.FAILED
    assert not move_refund(refund, RefundStatus.SUCCEEDED, source=TransitionSource.WEBHOOK)
    assert refund.status == RefundStatus.FAILED
    db.session.flush()
    reasons = [t.reason for t in db.session.query(RefundTransition).order_by(RefundTransition.id)]
    assert reasons[-1].startswith("failed after it had succeeded")


def test_the_books_follow_a_card_refund_that_succeeds_then_fails(app_ctx: Flask) -> None:
    refund = _refund(app_ctx)
    source, clearing = Source(SourceKind.REFUND, refund.id), Account.clearing(refund.provider)
    amount = refund.amount_minor
    assert move_refund(refund, RefundStatus.SUCCEEDED, source=TransitionSource.REFUND)
    assert not move_refund(refund, RefundStatus.SUCCEEDED, source=TransitionSource.WEBHOOK)
    assert journal.entries_of(source) == {
        "succeeded": [("refunds", amount, "EUR"), (clearing, -amount, "EUR")]
    }
    assert move_refund(refund, RefundStatus.FAILED, source=TransitionSource.WEBHOOK)
    db.session.commit()  # the database's check of every entry
    assert journal.entries_of(source)["failed"] == [
        ("refunds", -amount, "EUR"),
        (clearing, amount, "EUR"),
    ]
    assert journal.balances(Account.REFUNDS) == {("refunds", "EUR"): 0}


def _emails(kind: EmailKind) -> list[OutboxMessage]:
    return list(db.session.scalars(select(OutboxMessage).where(OutboxMessage.kind == kind)))


def test_a_refund_that_fails_after_it_succeeded_tells_the_customer_in_their_language(
    app_ctx: Flask, client: FlaskClient
) -> None:
    customer = make_customer()
    customer.locale = "it"
    payment = make_payment(make_order(customer))
    refund = make_refund(payment, RefundStatus.UNKNOWN, amount_minor=500)
    assert move_refund(refund, RefundStatus.SUCCEEDED, source=TransitionSource.REFUND)
    assert _emails(EmailKind.REFUND_FAILED) == []  # succeeded: "your refund" only
    assert move_refund(refund, RefundStatus.FAILED, source=TransitionSource.WEBHOOK)
    (told,) = _emails(EmailKind.REFUND_FAILED)
    assert told.recipient == customer.email and told.subject_id == refund.id
    message = render_email(told)
    assert f"n. {refund.id}" in message["Subject"] and "rimborso" in message["Subject"].lower()
    body = message.get_body(preferencelist=("plain",))
    assert body is not None
    text = body.get_content()
    assert "5,00" in text and f"/orders/{refund.order_id}" in text
    # A refund that simply failed (never succeeded) was never announced: nothing to undo.
    other = make_refund(payment, RefundStatus.UNKNOWN, amount_minor=100)
    assert move_refund(other, RefundStatus.FAILED, source=TransitionSource.WEBHOOK)
    assert len(_emails(EmailKind.REFUND_FAILED)) == 1


def test_a_card_refund_an_admin_confirms_after_it_failed_is_booked_again(app_ctx: Flask) -> None:
    refund = _refund(app_ctx)
    source, amount = Source(SourceKind.REFUND, refund.id), refund.amount_minor
    assert move_refund(refund, RefundStatus.SUCCEEDED, source=TransitionSource.REFUND)
    assert move_refund(refund, RefundStatus.FAILED, source=TransitionSource.WEBHOOK)
    assert move_refund(refund, RefundStatus.NEEDS_REVIEW, source=TransitionSource.ADMIN)
    assert move_refund(refund, RefundStatus.SUCCEEDED, source=TransitionSource.ADMIN, actor="a")
    db.session.commit()
    assert list(journal.entries_of(source)) == ["succeeded", "failed", "succeeded:2"]
    assert journal.balances(Account.REFUNDS) == {("refunds", "EUR"): amount}


def _topup_refund(app_ctx: Flask) -> tuple[Refund, Payment]:
    """A refund of a top-up whose success credited its wallet (with its entry)."""
    topup = make_topup(make_customer(), amount_minor=1000)
    topup.provider_payment_id = f"pi_{topup.id}"
    assert move(topup, PaymentStatus.SUCCEEDED, source=TransitionSource.WEBHOOK)
    refund = make_refund(topup, amount_minor=300)
    take_from_wallet(refund, topup)
    return refund, topup


def test_a_top_up_refund_books_its_money_out_of_the_wallet_and_back_when_it_fails(
    app_ctx: Flask,
) -> None:
    refund, topup = _topup_refund(app_ctx)
    assert topup.wallet_id is not None
    wallet, clearing = Account.wallet(topup.wallet_id), Account.clearing("stripe")
    source = Source(SourceKind.REFUND, refund.id)
    assert journal.entries_of(source) == {"taken": [(wallet, 300, "EUR"), (clearing, -300, "EUR")]}
    assert move_refund(refund, RefundStatus.FAILED, source=TransitionSource.WEBHOOK)
    db.session.commit()  # every ledger entry has its posting, checked by the database
    assert journal.entries_of(source)["failed"] == [(wallet, -300, "EUR"), (clearing, 300, "EUR")]
    assert got(Wallet, topup.wallet_id).balance_minor == 1000
    assert journal.balances(wallet) == {(wallet, "EUR"): -1000}


def test_a_failed_top_up_refund_an_admin_confirms_takes_its_money_again(app_ctx: Flask) -> None:
    """It went back to the wallet when it failed; the card got it after all: the wallet
    no longer owes it (before this, the customer kept both)."""
    refund, topup = _topup_refund(app_ctx)
    assert topup.wallet_id is not None
    assert move_refund(refund, RefundStatus.FAILED, source=TransitionSource.WEBHOOK)
    assert move_refund(refund, RefundStatus.NEEDS_REVIEW, source=TransitionSource.ADMIN)
    assert move_refund(refund, RefundStatus.SUCCEEDED, source=TransitionSource.ADMIN, actor="a")
    db.session.commit()
    assert list(journal.entries_of(Source(SourceKind.REFUND, refund.id))) == [
        "taken",
        "failed",
        "taken:2",
    ]
    assert got(Wallet, topup.wallet_id).balance_minor == 700
    assert rebuild.check().mismatches == []
