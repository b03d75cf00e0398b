"""What a provider's answer means for a refund (the refund kind's `apply`,
services/refunds/kind.py), and the check that comes first: an answer that does not
match the refund we asked for moves nothing and goes to review."""

from __future__ import annotations

from datetime import datetime, timedelta

from models import Refund, RefundStatus, TransitionSource
from models.types import utcnow
from providers.outcomes import Declined, LookupOutcome, NotSent, Report, Succeeded, Unknown
from services.movements import answers as movement_answers
from services.movements import lifecycle
from services.movements.kinds import Kind
from services.refunds.state import move_refund
from settings import settings

FollowUp = lifecycle.FollowUp
_nothing = lifecycle.nothing


def mismatch(
    refund: Refund, provider_refund_id: str | None, report: Report, *, is_success: bool = True
) -> str | None:
    """What in the provider's answer is not the refund we asked for (None when all is,
    as for a charge): the one check of every kind (services/movements/answers.py),
    except that a refusal of the create names no refund at all (Stripe's 400): nothing
    was refunded, and it is a failure, not a contradiction."""
    if not is_success and provider_refund_id is None:
        return None
    held = refund.provider_refund_id
    return movement_answers.mismatch(
        "refund", refund, held, provider_refund_id, report, is_success=is_success
    )


def apply(
    kind: Kind,
    refund: Refund,
    outcome: LookupOutcome,
    source: TransitionSource,
    previously_sent: datetime | None = None,
) -> FollowUp:
    """What an answer means for the locked refund; returns what to enqueue after the
    commit (the refund kind's `apply`: services/refunds/kind.py)."""
    if isinstance(outcome, Succeeded | Declined):
        problem = mismatch(
            refund,
            outcome.provider_payment_id,
            outcome.report,
            is_success=isinstance(outcome, Succeeded),
        )
        if problem:
            _set_aside(refund, problem, source)
            return _nothing
        refund.provider_refund_id = refund.provider_refund_id or outcome.provider_payment_id
    if isinstance(outcome, Succeeded):
        move_refund(refund, RefundStatus.SUCCEEDED, source=source, reason="refunded")
        return _nothing
    if isinstance(outcome, Declined):
        refund.failure_code = outcome.code[:64]
        move_refund(
            refund,
            RefundStatus.FAILED,
            source=source,
            reason=f"refused: {outcome.code} {outcome.message}".strip(),
        )
        return _nothing
    if not isinstance(outcome, NotSent | Unknown):  # Absent: the caller's; no ActionRequired
        return _nothing
    refund.last_error = outcome.reason[:500]
    if isinstance(outcome, Unknown) and outcome.provider_payment_id:
        # The provider has the refund and says it is on its way (Stripe: pending).
        problem = mismatch(refund, outcome.provider_payment_id, outcome.report)
        if problem:
            _set_aside(refund, problem, source)
        else:
            await_provider(refund, outcome.provider_payment_id, source, outcome.reason)
        return _nothing
    if refund.status == RefundStatus.PROCESSING:  # no answer now: ask again in a while
        await_provider(refund, refund.provider_refund_id or "", source, outcome.reason)
        return _nothing
    if isinstance(outcome, Unknown) and refund.status == RefundStatus.PENDING:
        move_refund(refund, RefundStatus.UNKNOWN, source=source, reason=outcome.reason)
    if refund.status != RefundStatus.UNKNOWN:
        return _nothing
    return lifecycle.schedule_lookup(kind, refund)


def _set_aside(refund: Refund, problem: str, source: TransitionSource) -> None:
    """An answer that does not match the refund moves nothing: review, and one count."""
    lifecycle.count_mismatch(refund.provider, source.value)
    move_refund(
        refund,
        RefundStatus.NEEDS_REVIEW,
        source=source,
        reason=f"the provider's answer does not match the refund: {problem}",
    )


def await_provider(
    refund: Refund, provider_refund_id: str, source: TransitionSource, reason: str = ""
) -> None:
    """The provider has the refund and its outcome comes later (an event, or a lookup
    every REFUND_PROCESSING_LOOKUP_S): processing, without escalating, until
    REFUND_PROCESSING_MAX_DAYS after the first send; then a person looks (review)."""
    config = settings().reconcile
    refund.provider_refund_id = refund.provider_refund_id or provider_refund_id or None
    started = refund.first_sent_at or refund.created_at
    if utcnow() - started > timedelta(days=config.refund_processing_max_days):
        refund.next_reconcile_at = None
        move_refund(
            refund,
            RefundStatus.NEEDS_REVIEW,
            source=source,
            reason=f"still on its way at the provider after "
            f"{config.refund_processing_max_days} days: {reason or refund.last_error}",
        )
        return
    move_refund(
        refund,
        RefundStatus.PROCESSING,
        source=source,
        reason=reason or f"the provider has refund {provider_refund_id}; its outcome comes later",
    )
    if refund.status == RefundStatus.PROCESSING:
        delay_s = config.refund_processing_lookup_s
        refund.next_reconcile_at = utcnow() + timedelta(seconds=delay_s)
