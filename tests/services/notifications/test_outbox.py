"""The outbox row commits with its cause and only then is enqueued; a repeat of the cause
writes no second row; a rolled-back cause leaves nothing."""

from __future__ import annotations

from flask import Flask
from sqlalchemy import func, select

from extensions import db
from models import EmailKind, OutboxMessage
from services.notifications.outbox import queue_email
from tests.factories import make_customer


def _count() -> int:
    return int(db.session.scalar(select(func.count()).select_from(OutboxMessage)) or 0)


def test_one_row_per_kind_and_subject(app_ctx: Flask) -> None:
    customer = make_customer()
    queue_email(EmailKind.RECEIPT, 7, customer_id=customer.id)
    queue_email(EmailKind.RECEIPT, 7, customer_id=customer.id)  # the cause again
    queue_email(EmailKind.REVIEW_ALERT, 7)  # another kind, same subject
    db.session.commit()
    rows = db.session.scalars(select(OutboxMessage).order_by(OutboxMessage.id)).all()
    assert [(r.kind, r.recipient) for r in rows] == [
        (EmailKind.RECEIPT, customer.email),
        (EmailKind.REVIEW_ALERT, app_ctx.config["ADMIN_ALERT_EMAIL"]),
    ]


def test_a_rolled_back_cause_leaves_no_email(app_ctx: Flask) -> None:
    customer = make_customer()
    db.session.commit()
    queue_email(EmailKind.RECEIPT, 8, customer_id=customer.id)
    db.session.rollback()
    assert _count() == 0
