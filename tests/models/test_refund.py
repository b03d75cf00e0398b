"""A refund's states follow a payment's rules: final states only go to review."""

from __future__ import annotations

from models import ALLOWED_TRANSITIONS, REFUND_TRANSITIONS, PaymentStatus, RefundStatus


def test_refund_states_mirror_payment_states() -> None:
    for status, targets in REFUND_TRANSITIONS.items():
        payment_targets = ALLOWED_TRANSITIONS[PaymentStatus(status.value)] - {
            PaymentStatus.REQUIRES_ACTION  # a refund never waits for the customer
        }
        assert {t.value for t in targets} == {t.value for t in payment_targets}
    assert [s for s in RefundStatus if s.is_final] == [
        RefundStatus.SUCCEEDED,
        RefundStatus.FAILED,
        RefundStatus.NEEDS_REVIEW,
    ]
