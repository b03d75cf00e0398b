"""The charge kind (services/movements/kinds.py): a payment sent to its provider, run by
the engine of every kind (services/movements/engine.py). What is its own: the request,
what an answer means for the payment (services/payments/answers.py: a success, a
decline, 3-D Secure, one still processing), card testing refused before a send, the
success in one statement (services/payments/settling.py). A payment stays with the
provider it was created for (services/payments/routing.py)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from sqlalchemy import update

from extensions import db
from models import Payment, PaymentStatus, TransitionSource
from models.types import utcnow
from providers.base import ChargeRequest
from providers.outcomes import NotSent
from services.accounts import provider_customers
from services.movements import engine, kinds, lifecycle
from services.movements.locks import lock_payment
from services.payments import answers, attempts, events, in_flight, settling
from services.payments.state import move
from settings import settings

# The provider's customer, from the first send on and never changed after it.
_CLAIM_SET = """, provider_customer_id = CASE WHEN before.first_sent_at IS NULL THEN (
        SELECT pc.provider_customer_id FROM provider_customers pc
        WHERE pc.customer_id = p.customer_id AND pc.provider = p.provider
    ) ELSE p.provider_customer_id END"""
_CLAIM_RETURNING = """p.id, p.idempotency_key, p.customer_id, p.purpose, p.order_id,
    p.provider, p.amount_minor, p.currency, p.provider_payment_id, p.payment_method,
    p.send_count, p.last_sent_at, p.provider_customer_id,
    (SELECT c.last_declined_at FROM customers c WHERE c.id = p.customer_id)
        AS customer_declined_at"""


def request_for(payment: Any, first_sent_at: datetime | None) -> ChargeRequest:
    """The charge request of a payment (an ORM row, or a claim's record)."""
    return ChargeRequest(
        payment_id=payment.id,
        idempotency_key=str(payment.idempotency_key),
        amount_minor=payment.amount_minor,
        currency=payment.currency,
        order_id=payment.order_id,
        provider_payment_id=payment.provider_payment_id,
        first_sent_at=first_sent_at,
        last_sent_at=payment.last_sent_at if first_sent_at else None,
        # (a claim's record has none: a first send needs none)
        clock_offset_s=getattr(payment, "provider_clock_offset_s", None),
        payment_method=payment.payment_method,
        provider_customer_id=payment.provider_customer_id,
        # The route of blueprints/checkout.return_from_bank.
        return_url=f"{settings().payments.public_url}/payments/{payment.id}/return",
    )


def _named(request: ChargeRequest, provider_payment_id: str) -> ChargeRequest:
    if request.provider_payment_id is not None:
        return request
    return dataclasses.replace(request, provider_payment_id=provider_payment_id)


def _before_send(row: Any) -> Any:
    """Card testing (services/payments/attempts.py, in_flight.py): the attempt takes its
    place among its customer's and its card's declines and attempts in flight; it waits
    (NotSent: deferred) while attempts in flight hold them, and is failed without being
    sent (None) once declines do. A customer's first payment at a provider that keeps
    customers (Stripe) has its customer made there first, and is sent with it, so its
    lookup lists that customer's intents alone (a short page, however busy the shop;
    made later, the first payment's lookup read every intent around its sends)."""
    verdict, why = _card_testing(row)
    if verdict == "busy":
        return NotSent(f"card testing: {why}; sent once their answers are in", None, False)
    if verdict == "full":  # (its places, if any, are given back by _after_send)
        payment = engine.release(CHARGE, row.id)
        lifecycle.unmark_sending(payment, row.previous_sent_at)
        payment.last_sent_at = row.previous_last_sent_at
        answers.refuse_card(payment, why)
        db.session.commit()
        return None
    if (
        row.provider_customer_id is None
        and row.previous_sent_at is None
        and provider_customers.can_have(row.provider)
    ):
        made = provider_customers.create(row.customer_id, row.provider)  # commits
        if made is not None:
            db.session.execute(
                update(Payment)
                .where(Payment.id == row.id, Payment.provider_customer_id.is_(None))
                .values(provider_customer_id=made)
            )
            db.session.commit()
            return row._replace(provider_customer_id=made)
    return row


def _card_testing(row: Any) -> tuple[str, str]:
    """('', ''): the attempt is sent, its places taken; ('busy', why): it waits for the
    attempts in flight; ('full', why): it is refused."""
    lately = attempts.has_recent_declines(row.customer_declined_at, utcnow())
    place = in_flight.reserve(row.customer_id, row.id, has_declined_lately=lately)
    if place == "full":
        return "full", "this customer's card payments declined too often lately"
    if place == "busy":
        return "busy", "this customer's declines and card payments in flight reached the limit"
    if place == "unread":
        return "", ""
    fingerprint = attempts.card_fingerprint(row)
    if fingerprint is not None and attempts.is_card_blocked(row.customer_id, fingerprint):
        return "full", "this card declined too often for this customer lately"
    card = in_flight.reserve_card(row.customer_id, row.id, fingerprint)
    if card == "full":
        return "full", "this card declined too often for this customer lately"
    if card == "busy":
        return "busy", "this card's declines and payments in flight reached the limit"
    return "", ""


def _after_send(row: Any) -> None:
    """The send's answer is applied (a decline counted): its places are given back."""
    in_flight.release(row.customer_id, row.id)


CHARGE: kinds.Kind = kinds.register(
    kinds.Kind(
        name="charge",
        noun="outcome",
        model=Payment,
        statuses=PaymentStatus,
        looked_up=(PaymentStatus.UNKNOWN,),
        send_source=TransitionSource.CHARGE,
        lookup_prefix="reconcile",
        move=move,
        lock=lock_payment,
        request_for=request_for,
        named=_named,
        send=lambda provider, request: provider.charge(request),
        lookup=lambda provider, request: provider.lookup(request),
        apply=answers.apply_outcome,
        on_event=events.apply_payment_event,
        locate_event=events.locate_payment,
        claim_set=_CLAIM_SET,
        claim_returning=_CLAIM_RETURNING,
        before_send=_before_send,
        after_send=_after_send,
        settle=settling.settle,
    )
)
