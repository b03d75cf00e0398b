"""A provider's payment events (the charge kind's handler): found by our id, checked
against the payment, applied under its lock, never backwards; a reference that cannot
be ours is refused, not retried."""

from __future__ import annotations

from datetime import timedelta

import pytest
from flask import Flask

from models import PaymentStatus, WebhookState
from models.types import utcnow
from providers.events import ProviderEvent
from providers.outcomes import Report
from services.payments.events import apply_payment_event, locate_payment
from tests.factories import make_customer, make_order, make_payment
from tests.webhook_support import recorded


def _event(
    payment_id: object, outcome: str | None, minutes: int = 0, decline_code: str | None = None
) -> ProviderEvent:
    return ProviderEvent(
        f"evt_{outcome}_{minutes}",
        f"payment_intent.{outcome}",
        utcnow() + timedelta(minutes=minutes),
        outcome,
        "pi_1",
        Report(amount_minor=1000, currency="EUR", our_id=str(payment_id)),
        decline_code,
    )


def test_an_event_is_located_by_our_id_and_a_bad_one_is_refused(app_ctx: Flask) -> None:
    payment = make_payment(make_order(make_customer()))
    assert locate_payment("stripe", _event(payment.id, "succeeded")) == (
        payment.id,
        payment.order_id,
    )
    assert locate_payment("stripe", _event(payment.id, None)) is None  # no effect on payments
    with pytest.raises(ValueError, match="is not a payment id"):
        locate_payment("stripe", _event("12abc", "succeeded"))


def test_a_failure_keeps_its_decline_code_and_an_older_event_moves_nothing(
    app_ctx: Flask,
) -> None:
    payment = make_payment(make_order(make_customer()))
    failed = _event(payment.id, "failed", 5, decline_code="card_declined")
    assert apply_payment_event("stripe", failed, recorded(failed)) == WebhookState.APPLIED
    assert (payment.status, payment.decline_code) == (PaymentStatus.FAILED, "card_declined")
    older = _event(payment.id, "succeeded", 0)
    record = recorded(older)
    assert apply_payment_event("stripe", older, record) == WebhookState.IGNORED
    assert "older than the event applied" in (record.note or "")
    assert payment.status == PaymentStatus.FAILED


def test_a_decline_a_webhook_reports_counts_for_card_testing(app_ctx: Flask) -> None:
    """3-D Secure failed, told by the provider's event: counted like a send's decline
    (once, such declines were never counted: 14 failures, never blocked)."""
    from redis import Redis

    from extensions import db
    from models import Customer
    from services.payments.attempts import count_key

    payment = make_payment(make_order(make_customer()))
    payment.status = PaymentStatus.REQUIRES_ACTION
    failed = _event(payment.id, "failed", decline_code="authentication_failed")
    assert apply_payment_event("stripe", failed, recorded(failed)) == WebhookState.APPLIED
    customer = db.session.get(Customer, payment.customer_id)
    assert customer is not None and customer.last_declined_at is not None
    declines = Redis.from_url(app_ctx.config["REDIS_URL"]).get(
        count_key("customer", str(payment.customer_id))
    )
    assert declines == b"1"


def test_an_event_for_a_payment_not_stored_yet_waits(app_ctx: Flask) -> None:
    event = _event(2_000_000, "succeeded")
    record = recorded(event)
    assert apply_payment_event("stripe", event, record) == WebhookState.PENDING
    assert record.note == "payment not found yet" and record.processed_at is None
