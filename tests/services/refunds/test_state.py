"""The refund state machine: final states never regress, a conflicting report goes to
review, which only an admin leaves; the ledger follows the state."""

from __future__ import annotations

import uuid

from flask import Flask

from extensions import db
from models import Refund, RefundStatus, RefundTransition, TransitionSource
from services.refunds.state import move_refund
from tests.factories import make_customer, make_order, make_payment


def _refund(app_ctx: Flask) -> Refund:
    payment = make_payment(make_order(make_customer()))
    refund = Refund(
        idempotency_key=uuid.uuid4(),
        payment_id=payment.id,
        order_id=payment.order_id,
        provider="stripe",
        amount_minor=100,
        currency="EUR",
        reason="state test",
        actor="ops",
        status=RefundStatus.UNKNOWN,
    )
    db.session.add(refund)
    db.session.flush()
    return refund


def test_final_states_never_regress_and_conflicts_go_to_review(app_ctx: Flask) -> None:
    refund = _refund(app_ctx)
    assert move_refund(refund, RefundStatus.SUCCEEDED, source=TransitionSource.RECONCILE)
    assert not move_refund(refund, RefundStatus.UNKNOWN, source=TransitionSource.CHARGE)
    assert move_refund(refund, RefundStatus.FAILED, source=TransitionSource.WEBHOOK)
    assert refund.status == RefundStatus.NEEDS_REVIEW  # both facts kept for a person
    assert not move_refund(refund, RefundStatus.SUCCEEDED, source=TransitionSource.WEBHOOK)
    assert refund.status == RefundStatus.NEEDS_REVIEW
    assert move_refund(refund, RefundStatus.SUCCEEDED, source=TransitionSource.ADMIN, actor="a")
    db.session.flush()
    reasons = [t.reason for t in db.session.query(RefundTransition).order_by(RefundTransition.id)]
    assert any(r.startswith("conflict: refund was succeeded") for r in reasons)
    assert any(r.startswith("reported succeeded") for r in reasons)
