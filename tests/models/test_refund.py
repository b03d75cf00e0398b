"""A refund's states follow a payment's rules: final states only go to review."""

from __future__ import annotations

from models import ALLOWED_TRANSITIONS, REFUND_TRANSITIONS, PaymentStatus, RefundStatus


def test_refund_states_mirror_payment_states() -> None:
    """A payment's rules, with the two facts Stripe publishes about refunds: one can be
    on its way for days (processing), and one that succeeded can fail later."""
    extra = {
        RefundStatus.PENDING: {"processing"},
        RefundStatus.UNKNOWN: {"processing"},
        RefundStatus.SUCCEEDED: {"failed"},
    }
    for status, targets in REFUND_TRANSITIONS.items():
        if status == RefundStatus.PROCESSING:
            assert targets == {
                RefundStatus.SUCCEEDED,
                RefundStatus.FAILED,
                RefundStatus.NEEDS_REVIEW,
            }
            continue
        payment_targets = ALLOWED_TRANSITIONS[PaymentStatus(status.value)] - {
            PaymentStatus.REQUIRES_ACTION  # a refund never waits for the customer
        }
        expected = {t.value for t in payment_targets} | extra.get(status, set())
        assert {t.value for t in targets} == expected
    assert [s for s in RefundStatus if s.is_final] == [
        RefundStatus.SUCCEEDED,
        RefundStatus.FAILED,
        RefundStatus.NEEDS_REVIEW,
    ]
