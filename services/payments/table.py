"""The payment's states as data: the machine's table (services/movements/machine.py),
read by its one state machine (services/payments/state.py) and its success's statement
(services/payments/settling.py)."""

from __future__ import annotations

from models import ALLOWED_TRANSITIONS, Payment, PaymentStatus, PaymentTransition
from services.movements import machine

RESOLVED = (PaymentStatus.SUCCEEDED, PaymentStatus.FAILED)
# The reason of a failure the bank (or the provider for it) declined; any other failure
# is no decline to its customer (services/payments/reads.customer_reason).
DECLINED_PREFIX = "declined: "


def log_context(payment: Payment) -> dict[str, object]:
    """The fields every log line about a payment carries (see logs.py)."""
    return {
        "payment_id": payment.id,
        "idempotency_key": str(payment.idempotency_key),
        "provider": payment.provider,
    }


TABLE: machine.Table[PaymentStatus] = machine.Table(
    noun="payment",
    transitions=ALLOWED_TRANSITIONS,
    final=frozenset(RESOLVED),
    review=PaymentStatus.NEEDS_REVIEW,
    record=PaymentTransition,
    owner="payment_id",
    describe=lambda p: f"key {p.idempotency_key}, provider {p.provider}",
    context=log_context,
)
