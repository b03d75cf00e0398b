"""An admin's decision moves the money with it: 'failed' takes the effect back in the
same transaction (or is refused when the credit was spent), and the audit compares the
ledger with the payments."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
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
from services.accounts.customers import issue_api_token
from services.books import journal
from services.refunds.issue import refund_payment
from services.wallet import ledger
from services.wallet.audit import audit_wallets
from tests.admin_support import admin_csrf
from tests.helpers import (
    charge_payment,
    committed_payment,
    committed_topup,
    got,
    last_state,
    payment,
    run_jobs,
    signed_post,
    stripe_event,
    unknown_payment,
    wallet_balance,
)


def _succeed_then_dispute(app: Flask, client: FlaskClient, payment_id: int, amount: int) -> None:
    """Charged through the sandbox, then a later 'failed' report: needs_review."""
    with app.app_context():
        charge_payment(payment_id)
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    found = payment(app, payment_id)
    event = stripe_event(
        payment_id,
        "payment_intent.payment_failed",
        intent_id=found.provider_payment_id or "",
        amount=amount,
    )
    signed_post(client, event)
    last_state(app)
    assert payment(app, payment_id).status == PaymentStatus.NEEDS_REVIEW


def _resolve(admin_client: FlaskClient, payment_id: int, outcome: str) -> str:
    response = admin_client.post(
        f"/admin/unknown/{payment_id}/resolve",
        data={
            "confirm": "yes",
            "outcome": outcome,
            "reason": "checked with the provider",
            "csrf_token": admin_csrf(admin_client),
        },
        follow_redirects=True,
    )
    return response.get_data(as_text=True)


def _back_to_review(app: Flask, payment_id: int) -> None:
    """A later conflicting report (the way the state machine would set it)."""
    with app.app_context():
        found = db.session.get(Payment, payment_id)
        assert found is not None
        found.status = PaymentStatus.NEEDS_REVIEW
        db.session.commit()


def _ledger(app: Flask) -> list[tuple[str, int, str]]:
    with app.app_context():
        rows = db.session.execute(
            select(LedgerEntry.operation_id, LedgerEntry.amount_minor, LedgerEntry.kind).order_by(
                LedgerEntry.id
            )
        ).all()
    return [tuple(row) for row in rows]  # type: ignore[misc]  # a Row is a tuple at run time


def test_failed_takes_a_topup_credit_back(
    app: Flask, client: FlaskClient, admin_client: FlaskClient, sandbox: Any
) -> None:
    payment_id = committed_topup(app, amount_minor=700)
    _succeed_then_dispute(app, client, payment_id, 700)
    assert wallet_balance(app, payment_id) == 700  # under review, the credit stands
    page = _resolve(admin_client, payment_id, "failed")
    assert "wallet credit of €7.00 taken back" in page
    assert payment(app, payment_id).status == PaymentStatus.FAILED
    assert wallet_balance(app, payment_id) == 0
    assert _ledger(app) == [
        (f"topup:{payment_id}", 700, "topup"),
        (f"reversal:{payment_id}:1", -700, "reversal"),
    ]
    with app.app_context():
        assert audit_wallets().mismatches == []


@pytest.mark.parametrize("refunded", [2000, 500], ids=["refunded in full", "refunded in part"])
def test_failed_after_a_refund_takes_back_only_what_is_left(
    app: Flask, client: FlaskClient, admin_client: FlaskClient, sandbox: Any, refunded: int
) -> None:
    """The reported hole: a top-up of 20.00 refunded in full, then a late failure report
    and an admin's Failed took another 20.00 from the wallet; the audit saw nothing."""
    payment_id = committed_topup(app, amount_minor=2000)
    with app.app_context():
        charge_payment(payment_id)
        refund_payment(payment_id, refunded, "the customer asked", "ops", uuid.uuid4())
    run_jobs(app)
    assert wallet_balance(app, payment_id) == 2000 - refunded
    found = payment(app, payment_id)
    with app.app_context():  # other money in the wallet, which the decision must not touch
        ledger.credit(db.session.get(Wallet, found.wallet_id), 5000, "other-money")  # type: ignore[arg-type]  # the wallet exists (made above)
    signed_post(
        client,
        stripe_event(
            payment_id,
            "payment_intent.payment_failed",
            intent_id=found.provider_payment_id or "",
            amount=2000,
        ),
    )
    last_state(app)
    assert payment(app, payment_id).status == PaymentStatus.NEEDS_REVIEW
    page = _resolve(admin_client, payment_id, "failed")
    assert payment(app, payment_id).status == PaymentStatus.FAILED
    assert wallet_balance(app, payment_id) == 5000  # before: 3000 + refunded, a double debit
    left = 2000 - refunded
    assert f"wallet credit of €{left / 100:.2f} taken back" in page
    with app.app_context():
        assert audit_wallets().mismatches == []


def test_the_audit_sees_a_top_up_taken_back_twice(app: Flask, sandbox: Any) -> None:
    payment_id = committed_topup(app, amount_minor=2000)
    with app.app_context():
        charge_payment(payment_id)
        refund_payment(payment_id, 2000, "the customer asked", "ops", uuid.uuid4())
        found = db.session.get(Payment, payment_id)
        assert found is not None and found.wallet_id is not None
        ledger.credit(db.session.get(Wallet, found.wallet_id), 2000, "unrelated-credit")  # type: ignore[arg-type]  # the wallet exists (made above)
        # What the old decision did: the whole credit taken back over the refund.
        ledger.apply_movement(
            found.wallet_id,
            -2000,
            "EUR",
            operation_id=f"reversal:{payment_id}:1",
            kind=LedgerKind.REVERSAL,
            source=Source(SourceKind.PAYMENT, payment_id),
            against=[journal.Leg(Account.clearing("stripe"), -2000, "EUR")],
        )
        found.status, found.is_effect_applied = PaymentStatus.FAILED, False
        db.session.commit()
        problems = audit_wallets().mismatches
    assert any(
        f"top-up payment {payment_id} (failed): credit minus refunds and chargebacks "
        f"minus reversals is -€20.00" in p
        for p in problems
    ), problems


def test_failed_reopens_the_order(
    app: Flask, client: FlaskClient, admin_client: FlaskClient, sandbox: Any
) -> None:
    payment_id = committed_payment(app)
    _succeed_then_dispute(app, client, payment_id, 1000)
    _resolve(admin_client, payment_id, "failed")
    with app.app_context():
        found = db.session.get(Payment, payment_id)
        assert found is not None and found.status == PaymentStatus.FAILED
        order = db.session.get(Order, found.order_id)
        assert order is not None and order.status == OrderStatus.OPEN and order.paid_at is None
        assert audit_wallets().mismatches == []


def test_failed_is_refused_when_the_credit_was_spent(
    app: Flask, client: FlaskClient, admin_client: FlaskClient, sandbox: Any
) -> None:
    payment_id = committed_topup(app, amount_minor=700)
    _succeed_then_dispute(app, client, payment_id, 700)
    with app.app_context():
        wallet_id = got(Payment, payment_id).wallet_id
        target = db.session.get(Wallet, wallet_id)
        assert target is not None
        ledger.debit(target, 500, "spend-it")
    page = _resolve(admin_client, payment_id, "failed")
    assert "its wallet credit was already spent" in page and "Nothing was changed" in page
    assert payment(app, payment_id).status == PaymentStatus.NEEDS_REVIEW
    assert wallet_balance(app, payment_id) == 200
    assert [kind for _, _, kind in _ledger(app)] == ["topup", "debit"]


def test_succeeded_after_a_reversal_credits_again_once(
    app: Flask, client: FlaskClient, admin_client: FlaskClient, sandbox: Any
) -> None:
    payment_id = committed_topup(app, amount_minor=300)
    _succeed_then_dispute(app, client, payment_id, 300)
    _resolve(admin_client, payment_id, "failed")
    # A later report conflicts again; the admin now decides it did succeed.
    _back_to_review(app, payment_id)
    _resolve(admin_client, payment_id, "succeeded")
    assert wallet_balance(app, payment_id) == 300
    assert [op for op, _, _ in _ledger(app)] == [
        f"topup:{payment_id}",
        f"reversal:{payment_id}:1",
        f"topup:{payment_id}:2",
    ]
    # Confirming a success whose effect is in place credits nothing more.
    _back_to_review(app, payment_id)
    _resolve(admin_client, payment_id, "succeeded")
    assert wallet_balance(app, payment_id) == 300
    with app.app_context():
        assert audit_wallets().mismatches == []


def test_a_customer_never_reads_an_admins_reason(app: Flask, admin_client: FlaskClient) -> None:
    payment_id = unknown_payment(app)
    with app.app_context():
        found = db.session.get(Payment, payment_id)
        assert found is not None
        owner = db.session.get(Customer, found.customer_id)
        assert owner is not None
        token = issue_api_token(owner)
    admin_client.post(
        f"/admin/unknown/{payment_id}/resolve",
        data={
            "confirm": "yes",
            "outcome": "failed",
            "reason": "customer 4711 is a known fraudster, per Jane",
            "csrf_token": admin_csrf(admin_client),
        },
    )
    seen = app.test_client().get(
        f"/api/payments/{payment_id}", headers={"Authorization": f"Bearer {token}"}
    )
    body = seen.get_data(as_text=True)
    assert seen.status_code == 200 and seen.get_json()["status"] == "failed"
    assert "fraudster" not in body
    # A failure an admin decided is no decline: it could not be completed.
    assert "the payment could not be completed; nothing was charged" in body


def test_a_refund_in_review_gets_a_decision_and_its_effect(
    app: Flask, admin_client: FlaskClient, sandbox: Any
) -> None:
    """The reported dead end: a refund in review had no way out."""
    from models import Refund, RefundStatus
    from services.movements.locks import lock_refund
    from services.refunds.state import move_refund

    payment_id = committed_topup(app, amount_minor=2000)
    with app.app_context():
        charge_payment(payment_id)
        refund, _ = refund_payment(payment_id, 800, "the customer asked", "ops", uuid.uuid4())
        refund_id = refund.id
        locked = lock_refund(refund_id)
        assert locked is not None
        move_refund(locked, RefundStatus.NEEDS_REVIEW, source=TransitionSource.WEBHOOK, reason="?")
        db.session.commit()
    assert wallet_balance(app, payment_id) == 1200  # the refund's money left the wallet
    page = admin_client.get(f"/admin/refunds/payment/{payment_id}").get_data(as_text=True)
    assert f'data-refund="{refund_id}"' in page and "decide-refund" in page
    form = {
        "csrf_token": admin_csrf(admin_client, f"/admin/refunds/payment/{payment_id}"),
        "outcome": "failed",
        "reason": "the provider shows no refund",
        "back": f"/admin/refunds/payment/{payment_id}",
    }
    unconfirmed = admin_client.post(f"/admin/refunds/decide/{refund_id}", data=form)
    assert unconfirmed.status_code == 303
    with app.app_context():
        assert got(Refund, refund_id).status == RefundStatus.NEEDS_REVIEW
    decided = admin_client.post(
        f"/admin/refunds/decide/{refund_id}", data={**form, "confirm": "yes"}, follow_redirects=True
    )
    assert f"refund {refund_id} is failed" in decided.get_data(as_text=True)
    assert wallet_balance(app, payment_id) == 2000  # nothing went back: the money returns
    with app.app_context():
        assert audit_wallets().mismatches == []
    again = admin_client.post(
        f"/admin/refunds/decide/{refund_id}", data={**form, "confirm": "yes"}, follow_redirects=True
    )
    assert "is failed" in again.get_data(as_text=True) and wallet_balance(app, payment_id) == 2000
