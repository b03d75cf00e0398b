"""Provider reports are checked against the payment before they move money.

A charge answer, a lookup, a search hit and a webhook each say which payment the
provider acted on and for how much. Any of these may be wrong (a bug, a proxy, a
replayed or forged event signed with a leaked secret): a report moves money only
when its amount, currency, our reference and (once we know it) the provider's
payment id all match the payment. A mismatch is never applied: the payment goes
to needs_review with both sides in the reason.
"""

from __future__ import annotations

import logging

from models import Payment, PaymentStatus, TransitionSource
from providers.outcomes import Report
from services.movements import answers as movement_answers
from services.movements import lifecycle
from services.payments.state import log_context, move

log = logging.getLogger(__name__)

MISMATCH_PREFIX = "report mismatch"  # transition reasons start with it (dashboard, search)


def mismatch(
    payment: Payment, provider_payment_id: str | None, report: Report, *, is_success: bool
) -> str | None:
    """What in the report contradicts the payment, or None when it matches (the one
    check of every kind: services/movements/answers.py)."""
    held = payment.provider_payment_id
    return movement_answers.mismatch(
        "payment", payment, held, provider_payment_id, report, is_success=is_success
    )


def set_aside(
    payment: Payment, problem: str, *, source: TransitionSource, what: str, actor: str | None = None
) -> None:
    """Send a locked payment whose report did not match to review (caller's transaction)."""
    lifecycle.count_mismatch(payment.provider, source.value)
    log.error(
        "payment %s (key %s, provider %s): %s does not match the payment: %s",
        payment.id,
        payment.idempotency_key,
        payment.provider,
        what,
        problem,
        extra=log_context(payment),
    )
    payment.next_reconcile_at = None
    move(
        payment,
        PaymentStatus.NEEDS_REVIEW,
        source=source,
        reason=f"{MISMATCH_PREFIX}: {what} says {problem}",
        actor=actor,
    )
