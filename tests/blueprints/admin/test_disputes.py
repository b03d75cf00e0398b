"""The dashboard's disputes: the overview lists the open ones with their evidence due
date (past due in red) and a link to the payment; the records list every dispute."""

from __future__ import annotations

from datetime import timedelta

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import (
    Dispute,
    DisputeStatus,
    DisputeTransition,
    Order,
    OrderStatus,
    PaymentStatus,
    TransitionSource,
)
from models.types import utcnow
from tests.admin_support import admin_as, admin_csrf
from tests.factories import make_customer, make_dispute, make_order, make_payment
from tests.helpers import got


def _dispute(app: Flask, status: DisputeStatus, due_in_h: float | None, ref: str) -> int:
    with app.app_context():
        payment = make_payment(make_order(make_customer()))
        make_dispute(
            payment,
            status,
            is_withdrawn=True,
            provider_dispute_id=ref,
            evidence_due_by=None if due_in_h is None else utcnow() + timedelta(hours=due_in_h),
        )
        db.session.commit()
        return payment.id


def test_the_overview_lists_open_disputes_soonest_deadline_first(
    app: Flask, admin_client: FlaskClient
) -> None:
    later = _dispute(app, DisputeStatus.NEEDS_RESPONSE, 48, "dp_later")
    overdue = _dispute(app, DisputeStatus.NEEDS_RESPONSE, -1, "dp_overdue")
    _dispute(app, DisputeStatus.WON, 1, "dp_closed")
    page = admin_client.get("/admin/").get_data(as_text=True)
    section = page[page.index("Open disputes") :]
    assert section.index("dp_overdue") < section.index("dp_later")
    assert "dp_closed" not in section
    assert f"/admin/payment/{overdue}" in section and f"/admin/payment/{later}" in section
    row = section[section.index("dp_overdue") - 300 : section.index("dp_overdue")]
    assert "table-danger" in row and "PAST" in section


def test_the_records_list_every_dispute(app: Flask, admin_client: FlaskClient) -> None:
    _dispute(app, DisputeStatus.LOST, None, "dp_lost_one")
    page = admin_client.get("/admin/admin_disputes/").get_data(as_text=True)
    assert "dp_lost_one" in page and "lost" in page


def _in_review(app: Flask) -> tuple[int, int]:
    """A paid order's dispute our records and the provider's disagree on: (dispute, order)."""
    with app.app_context():
        order = make_order(make_customer())
        order.status, order.paid_at = OrderStatus.PAID, utcnow()
        payment = make_payment(order)
        payment.status, payment.is_effect_applied = PaymentStatus.SUCCEEDED, True
        dispute = make_dispute(payment, DisputeStatus.NEEDS_REVIEW, provider_dispute_id="dp_rev")
        db.session.commit()
        return dispute.id, order.id


def test_an_operator_decides_a_dispute_in_review_with_a_reason(
    app: Flask, client: FlaskClient
) -> None:
    dispute_id, order_id = _in_review(app)
    operator = admin_as(app, client, "operator")
    page = operator.get(f"/admin/admin_disputes/details/?id={dispute_id}").get_data(as_text=True)
    assert f"/admin/admin_disputes/decide/{dispute_id}" in page
    url = f"/admin/admin_disputes/decide/{dispute_id}"
    form = {"outcome": "lost", "reason": "lost at the bank", "csrf_token": admin_csrf(operator)}
    operator.post(url, data=form)  # not confirmed: nothing moves
    with app.app_context():
        assert got(Dispute, dispute_id).status == DisputeStatus.NEEDS_REVIEW
    decided = operator.post(url, data={**form, "confirm": "yes"}, follow_redirects=True)
    assert f"dispute {dispute_id} is lost" in decided.get_data(as_text=True)
    with app.app_context():
        assert got(Dispute, dispute_id).status == DisputeStatus.LOST
        assert got(Order, order_id).status == OrderStatus.DISPUTED
        moves = db.session.scalars(
            select(DisputeTransition).where(DisputeTransition.dispute_id == dispute_id)
        ).all()
        admin_moves = [m for m in moves if m.source == TransitionSource.ADMIN]
        # the decision and the funds it withdrew, both the admin's (never "webhook")
        assert [m.to_status for m in admin_moves] == [DisputeStatus.LOST, DisputeStatus.LOST]
        assert admin_moves[0].actor == "operator@example.com"
    again = operator.post(url, data={**form, "confirm": "yes"}, follow_redirects=True)
    assert f"dispute {dispute_id} is lost" in again.get_data(as_text=True)  # 409: said so


def test_a_viewer_sees_no_decision_and_cannot_send_one(app: Flask, client: FlaskClient) -> None:
    dispute_id, _ = _in_review(app)
    viewer = admin_as(app, client, "viewer")
    page = viewer.get(f"/admin/admin_disputes/details/?id={dispute_id}").get_data(as_text=True)
    assert "decide-dispute" not in page
    refused = viewer.post(
        f"/admin/admin_disputes/decide/{dispute_id}",
        data={
            "outcome": "won",
            "reason": "won it",
            "confirm": "yes",
            "csrf_token": admin_csrf(viewer),
        },
    )
    assert refused.status_code == 403
    with app.app_context():
        assert got(Dispute, dispute_id).status == DisputeStatus.NEEDS_REVIEW
