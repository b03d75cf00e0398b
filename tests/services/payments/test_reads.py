"""JSON shapes for the API: a customer never reads an admin's note or why a payment is in review."""

from __future__ import annotations

from models import PaymentStatus, PaymentTransition, TransitionSource
from services.payments.reads import ADMIN_DECISION, IN_REVIEW, NOT_COMPLETED, customer_reason


def _transition(
    source: TransitionSource, reason: str, to: PaymentStatus = PaymentStatus.FAILED
) -> PaymentTransition:
    return PaymentTransition(payment_id=1, to_status=to, source=source, reason=reason)


def test_an_admins_reason_is_replaced_for_customers() -> None:
    note = "customer 4711 is a known fraudster"
    confirmed = _transition(TransitionSource.ADMIN, note, PaymentStatus.SUCCEEDED)
    assert customer_reason(confirmed) == ADMIN_DECISION
    # A failure an admin decided is no bank's decline either: "could not be completed".
    assert customer_reason(_transition(TransitionSource.ADMIN, note)) == NOT_COMPLETED


def test_a_failure_that_is_not_a_decline_is_never_called_one() -> None:
    absent = "provider has no record of the payment: no payment_intent among ..."
    assert customer_reason(_transition(TransitionSource.RECONCILE, absent)) == NOT_COMPLETED


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
