"""A dispute takes back money we received: one of a payment that never took any is
refused (a failed payment), and one of a payment not settled yet waits for its lookup."""

from __future__ import annotations

import pytest
from flask import Flask
from sqlalchemy import func, select

from extensions import db
from models import Dispute, PaymentStatus, WebhookState
from models.types import utcnow
from providers.events import DisputeFacts, ProviderEvent
from providers.outcomes import Report
from services.webhooks import events
from tests.factories import make_customer, make_order, make_payment
from tests.webhook_support import recorded


@pytest.mark.parametrize(
    ("status", "state"),
    [
        (PaymentStatus.FAILED, WebhookState.REJECTED),
        (PaymentStatus.NEEDS_REVIEW, WebhookState.REJECTED),
        (PaymentStatus.UNKNOWN, WebhookState.PENDING),
    ],
)
def test_a_dispute_of_a_payment_that_took_no_money_moves_nothing(
    app_ctx: Flask, status: PaymentStatus, state: WebhookState
) -> None:
    payment = make_payment(make_order(make_customer()), "braintree")
    payment.status, payment.provider_payment_id = status, "txn_untaken"
    db.session.commit()
    event = ProviderEvent(
        f"dispute_opened:dp_1:{status.value}",
        "dispute_opened",
        utcnow(),
        None,
        "dp_1",
        Report(reference=str(payment.idempotency_key)),
        kind="dispute",
        parent_payment_id="txn_untaken",
        dispute=DisputeFacts("lost", "fraud", payment.amount_minor, payment.currency, None),
    )
    record = recorded(event, "braintree")
    assert events.apply_event("braintree", event, record) == state
    db.session.commit()
    assert db.session.scalar(select(func.count()).select_from(Dispute)) == 0
    if state == WebhookState.REJECTED:
        assert "took no money" in (record.note or "")
