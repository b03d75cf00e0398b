"""A dispute's effect follows its status: withdrawn while the money is out, given back
when it is won, kept as it is in review; an admin's decision of a review settles it."""

from __future__ import annotations

from flask import Flask

from extensions import db
from models import (
    Dispute,
    DisputeStatus,
    Order,
    OrderStatus,
    Payment,
    RefundStatus,
    TransitionSource,
)
from services.disputes.state import move_dispute
from tests.factories import make_customer, make_dispute, make_order, make_payment, make_refund


def _disputed(app_ctx: Flask, order_status: OrderStatus = OrderStatus.PAID) -> Dispute:
    payment = make_payment(make_order(make_customer()))
    order = db.session.get(Order, payment.order_id)
    assert order is not None
    order.status = order_status
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


def test_a_partly_refunded_order_won_back_says_so_again(app_ctx: Flask) -> None:
    dispute = _disputed(app_ctx, OrderStatus.PARTIALLY_REFUNDED)
    payment = db.session.get(Payment, dispute.payment_id)
    assert payment is not None
    make_refund(payment, RefundStatus.SUCCEEDED, amount_minor=400)
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
