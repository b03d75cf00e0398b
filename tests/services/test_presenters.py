"""JSON shapes for the API: a customer never reads an admin's note."""

from __future__ import annotations

from models import PaymentStatus, PaymentTransition, TransitionSource
from services.presenters import ADMIN_DECISION, customer_reason


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
