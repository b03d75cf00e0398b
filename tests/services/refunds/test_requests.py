"""A customer's refund request: asked within the window with a reason, one waiting per
order; approved into one refund through the refund path (however often, however many
admins at once), or declined with a message the customer is emailed."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from extensions import db
from models import (
    Customer,
    EmailKind,
    Order,
    OutboxMessage,
    Payment,
    Refund,
    RefundRequest,
    RefundRequestStatus,
)
from models.types import utcnow
from services.platform.errors import ClientError
from services.refunds import requests
from tests.helpers import charged_for, override_settings, rows


def _paid_order(app: Flask, email: str = "anna@example.com") -> tuple[int, int]:
    """A card order charged at the sandbox: (customer id, order id)."""
    payment_id = charged_for(app, email)
    with app.app_context():
        paid = db.session.get(Payment, payment_id)
        assert paid is not None and paid.order_id is not None
        return paid.customer_id, paid.order_id


def _ask(app: Flask, customer_id: int, order_id: int, reason: str = "the mug is broken") -> int:
    with app.app_context():
        customer = db.session.get(Customer, customer_id)
        assert customer is not None
        return requests.ask(customer, order_id, reason).id


def test_a_customer_asks_once_with_a_reason(app: Flask, sandbox: Any) -> None:
    customer_id, order_id = _paid_order(app)
    with pytest.raises(ClientError, match="5 to 500"):
        _ask(app, customer_id, order_id, reason="bad")
    first = _ask(app, customer_id, order_id)
    with pytest.raises(ClientError) as again:
        _ask(app, customer_id, order_id)
    assert again.value.code == "refund_not_askable"
    assert rows(app, RefundRequest) == 1
    with app.app_context():
        found = db.session.get(RefundRequest, first)
        assert found is not None and found.status == RefundRequestStatus.WAITING


def test_no_request_for_someone_elses_or_an_unpaid_or_an_old_order(
    app: Flask, sandbox: Any, monkeypatch: Any
) -> None:
    customer_id, order_id = _paid_order(app)
    _, other_order = _paid_order(app, "bob@example.com")
    with pytest.raises(ClientError) as elsewhere:
        _ask(app, customer_id, other_order)
    assert elsewhere.value.code == "order_not_found"
    with app.app_context():
        order = db.session.get(Order, order_id)
        assert order is not None
        order.paid_at = utcnow() - timedelta(days=31)
        db.session.commit()
    with pytest.raises(ClientError, match="days to ask"):
        _ask(app, customer_id, order_id)
    override_settings(monkeypatch, app, REFUND_REQUEST_WINDOW_DAYS=0)
    with pytest.raises(ClientError, match="not asked for here"):
        _ask(app, customer_id, order_id)
    assert rows(app, RefundRequest) == 0


def test_approving_makes_one_refund_of_what_is_left(app: Flask, sandbox: Any) -> None:
    customer_id, order_id = _paid_order(app)
    request_id = _ask(app, customer_id, order_id)
    with app.app_context():
        said = requests.approve(request_id, None, "refunder@example.com")
        assert "approved: refund #" in said
        with pytest.raises(ClientError, match="approved already"):
            requests.approve(request_id, None, "refunder@example.com")
        refund = db.session.scalars(select(Refund)).one()
        assert refund.amount_minor == 1000 and refund.order_id == order_id
        assert refund.actor == "refunder@example.com" and "the mug is broken" in refund.reason
        found = db.session.get(RefundRequest, request_id)
        assert found is not None and found.refund_id == refund.id


def test_two_admins_approving_at_once_make_one_refund(app: Flask, sandbox: Any) -> None:
    customer_id, order_id = _paid_order(app)
    request_id = _ask(app, customer_id, order_id)
    start, said = threading.Barrier(2), []

    def approve(actor: str) -> None:
        with app.app_context():
            start.wait()
            try:
                said.append(requests.approve(request_id, None, actor))
            except ClientError as exc:
                said.append(f"refused: {exc}")
            finally:
                db.session.remove()

    threads = [threading.Thread(target=approve, args=(f"{n}@example.com",)) for n in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(said) == 2 and rows(app, Refund) == 1, said


def _decide(
    app: Flask, how: str, request_id: int, start: threading.Barrier, said: list[str]
) -> None:
    """One refunder's decision, at the barrier; what was decided goes to `said`."""
    with app.app_context():
        start.wait()
        try:
            if how == "approve":
                requests.approve(request_id, None, "a@example.com")
            else:
                requests.decline(request_id, "Worn for a month.", "b@example.com")
            said.append(how)
        except ClientError as exc:
            assert "already" in str(exc)
        finally:
            db.session.remove()


def test_approve_and_decline_at_once_decide_once(app: Flask, sandbox: Any) -> None:
    """20 races of a refunder approving and another declining the same request: each
    ends one way, whole: a refund and no decline email, or a decline emailed and no
    refund (once, 3 of 8 did both: the customer told no while the money went back)."""
    outcomes = []
    for race in range(20):
        customer_id, order_id = _paid_order(app, f"racer{race}@example.com")
        request_id = _ask(app, customer_id, order_id)
        start = threading.Barrier(2)
        said: list[str] = []
        threads = [
            threading.Thread(target=_decide, args=(app, how, request_id, start, said))
            for how in ("approve", "decline")
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        with app.app_context():
            found = db.session.get(RefundRequest, request_id)
            assert found is not None
            refunds = db.session.scalars(select(Refund).where(Refund.order_id == order_id)).all()
            emails = db.session.scalars(
                select(OutboxMessage).where(
                    OutboxMessage.kind == EmailKind.REFUND_DECLINED,
                    OutboxMessage.subject_id == request_id,
                )
            ).all()
        assert len(said) == 1, said  # exactly one decision
        if said == ["approve"]:
            assert found.status == RefundRequestStatus.APPROVED and len(refunds) == 1
            assert found.refund_id == refunds[0].id and emails == []
        else:
            assert found.status == RefundRequestStatus.DECLINED and refunds == []
            assert len(emails) == 1
        outcomes.append(said[0])
    assert len(outcomes) == 20


def test_declining_emails_the_customer_the_message(app: Flask, sandbox: Any) -> None:
    customer_id, order_id = _paid_order(app)
    request_id = _ask(app, customer_id, order_id)
    with app.app_context():
        with pytest.raises(ClientError):
            requests.decline(request_id, "no", "refunder@example.com")
        requests.decline(request_id, "The mug was used for a month.", "refunder@example.com")
        found = db.session.get(RefundRequest, request_id)
        assert found is not None and found.status == RefundRequestStatus.DECLINED
        email = db.session.scalars(
            select(OutboxMessage).where(OutboxMessage.kind == EmailKind.REFUND_DECLINED)
        ).one()
        assert email.subject_id == request_id and email.recipient == "anna@example.com"
    assert rows(app, Refund) == 0
    # declined, the customer may ask again (with more to say)
    assert _ask(app, customer_id, order_id, "the handle fell off too") != request_id
