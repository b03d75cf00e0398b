"""The refund kind (services/movements/kinds.py): money back to a customer through the
provider that charged it, run by the engine of every kind (services/movements/
engine.py). What is its own: the request, what an answer means (services/refunds/
answers.py: a refund on its way at the provider is `processing`, looked up until it
settles), and its events (services/refunds/events.py)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from extensions import db
from models import Payment, Refund, RefundStatus, TransitionSource
from providers.base import RefundRequest
from services.movements import kinds
from services.movements.locks import lock_refund
from services.refunds import answers, events
from services.refunds.state import move_refund


def request_for(refund: Any, first_sent_at: datetime | None) -> RefundRequest:
    """The refund request of a refund (an ORM row, or a claim's record)."""
    payment = db.session.get(Payment, refund.payment_id)
    assert payment is not None and payment.provider_payment_id is not None
    return RefundRequest(
        refund_id=refund.id,
        idempotency_key=str(refund.idempotency_key),
        payment_id=payment.id,
        provider_payment_id=payment.provider_payment_id,
        amount_minor=refund.amount_minor,
        currency=refund.currency,
        provider_refund_id=refund.provider_refund_id,
        first_sent_at=first_sent_at,
        last_sent_at=refund.last_sent_at if first_sent_at else None,
    )


def _named(request: RefundRequest, provider_refund_id: str) -> RefundRequest:
    if request.provider_refund_id is not None:
        return request
    return dataclasses.replace(request, provider_refund_id=provider_refund_id)


REFUND: kinds.Kind = kinds.register(
    kinds.Kind(
        name="refund",
        noun="refund",
        model=Refund,
        statuses=RefundStatus,
        looked_up=(RefundStatus.UNKNOWN, RefundStatus.PROCESSING),
        send_source=TransitionSource.REFUND,
        lookup_prefix="refund-reconcile",
        move=move_refund,
        lock=lock_refund,
        request_for=request_for,
        named=_named,
        send=lambda provider, request: provider.refund(request),
        lookup=lambda provider, request: provider.lookup_refund(request),
        apply=answers.apply,
        on_event=events.apply_refund_event,
        locate_event=events.locate_refund,
    )
)
