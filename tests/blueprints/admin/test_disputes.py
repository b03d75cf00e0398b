"""The dashboard's disputes: the overview lists the open ones with their evidence due
date (past due in red) and a link to the payment; the records list every dispute."""

from __future__ import annotations

from datetime import timedelta

from flask import Flask
from flask.testing import FlaskClient

from extensions import db
from models import DisputeStatus
from models.types import utcnow
from tests.factories import make_customer, make_dispute, make_order, make_payment


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
