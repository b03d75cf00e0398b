"""The database keeps a customer's refund requests straight: one waiting per order, and
an approved one always names its refund."""

from __future__ import annotations

import pytest
from flask import Flask
from sqlalchemy.exc import IntegrityError

from extensions import db
from models import RefundRequest, RefundRequestStatus
from tests.factories import make_customer, make_order


def test_one_waiting_request_per_order(app_ctx: Flask) -> None:
    order = make_order(make_customer())
    db.session.add(RefundRequest(order_id=order.id, customer_id=order.customer_id, reason="a"))
    db.session.flush()
    declined = RefundRequestStatus.DECLINED
    db.session.add(
        RefundRequest(order_id=order.id, customer_id=order.customer_id, reason="b", status=declined)
    )
    db.session.flush()  # decided ones do not count
    db.session.add(RefundRequest(order_id=order.id, customer_id=order.customer_id, reason="c"))
    with pytest.raises(IntegrityError):
        db.session.flush()
    db.session.rollback()


def test_an_approved_request_names_its_refund(app_ctx: Flask) -> None:
    order = make_order(make_customer())
    approved = RefundRequestStatus.APPROVED
    db.session.add(
        RefundRequest(order_id=order.id, customer_id=order.customer_id, reason="a", status=approved)
    )
    with pytest.raises(IntegrityError):
        db.session.flush()
    db.session.rollback()
