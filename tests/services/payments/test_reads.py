"""JSON shapes for the API: a customer never reads an admin's note or why a payment is in review."""

from __future__ import annotations

from models import PaymentStatus, PaymentTransition, TransitionSource
from services.payments.reads import ADMIN_DECISION, IN_REVIEW, customer_reason


def _transition(source: TransitionSource, reason: str) -> PaymentTransition:
    return PaymentTransition(
        payment_id=1, to_status=PaymentStatus.FAILED, source=source, reason=reason
    )


def test_an_admins_reason_is_replaced_for_customers() -> None:
    note = "customer 4711 is a known fraudster"
    assert customer_reason(_transition(TransitionSource.ADMIN, note)) == ADMIN_DECISION


def test_other_reasons_are_shown_as_recorded() -> None:
    reason = "declined: insufficient_funds"
    assert customer_reason(_transition(TransitionSource.CHARGE, reason)) == reason


def test_why_a_payment_went_to_review_stays_internal() -> None:
    """The reported leak: the customer API showed review reasons (a provider's answer,
    another payment, our own lookups)."""
    internal = "report mismatch: a webhook says payment_id '8', ours is '7'"
    review = PaymentTransition(
        payment_id=1,
        to_status=PaymentStatus.NEEDS_REVIEW,
        source=TransitionSource.WEBHOOK,
        reason=internal,
    )
    assert customer_reason(review) == IN_REVIEW
