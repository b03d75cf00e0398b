"""The refund and refund-reconcile jobs, on the provider's queue, through its gateway.

The same three steps as a charge (services/payments/charging.py): lease the refund and record
"may have been sent" (commit), call the provider with no transaction open, apply the
answer through the refund's state machine (commit). An unknown answer is resolved by
asking the provider, with the same delays and escalation as a charge's.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from datetime import datetime, timedelta

from extensions import db
from models import Payment, Refund, RefundStatus, TransitionSource
from models.types import utcnow
from providers.base import RefundRequest
from providers.outcomes import (
    Absent,
    Declined,
    LookupOutcome,
    NotSent,
    Report,
    Succeeded,
    Unknown,
)
from resilience.gateway import CallContext, is_refused
from services.movements import answers as movement_answers
from services.movements import janitor, lifecycle, replays
from services.movements.kinds import REFUND
from services.movements.locks import lock_refund
from services.platform.provider_clients import gateway_for, provider_for
from services.refunds.state import move_refund
from settings import settings

FollowUp = lifecycle.FollowUp
_nothing = lifecycle.nothing


def send_refund(refund_id: int) -> None:
    """Ask the provider to refund a pending refund once (returns early otherwise)."""
    now = utcnow()
    refund = _claim(refund_id, RefundStatus.PENDING, now)
    if refund is None:
        return
    previously_sent, previously_last = refund.first_sent_at, refund.last_sent_at
    request = _request_for(refund, previously_sent)
    provider = provider_for(refund.provider)
    attempt = refund.send_count + 1  # this send's number, as a charge's call says it
    context = CallContext("refund", request.payment_id, request.idempotency_key, attempt)
    outcome = gateway_for(refund.provider).call(
        context,
        lambda: provider.refund(request),
        before=functools.partial(_mark_sending, refund, now),
    )
    refund = _release(refund_id)
    if isinstance(outcome, NotSent):
        if not is_refused(outcome):
            lifecycle.unmark_sending(refund, previously_sent)
            refund.last_sent_at = previously_last
        follow_up = lifecycle.defer(REFUND, refund, outcome)
    else:
        follow_up = _apply(refund, outcome, REFUND.send_source)
    db.session.commit()
    follow_up()


def _mark_sending(refund: Refund, now: datetime) -> None:
    lifecycle.mark_sending(refund, now)
    db.session.commit()


def _mark_resend(refund_id: int) -> None:
    refund = lock_refund(refund_id)  # leased by us still: the lookup's transaction ended
    assert refund is not None
    _mark_sending(refund, utcnow())


def reconcile_refund(refund_id: int) -> None:
    """Ask the provider what happened to an unknown refund; resolve, ask later or escalate.
    While the provider keeps the key the ask starts with a replay, which is a send
    (services/movements/replays.py), as a charge's does."""
    now = utcnow()
    refund = _claim(refund_id, LOOKED_UP, now)
    if refund is None:
        return
    provider = provider_for(refund.provider)
    gateway = gateway_for(refund.provider)
    key, attempt = str(refund.idempotency_key), refund.reconcile_attempts + 1
    sent = _request_for(refund, refund.first_sent_at)

    def read(row: Refund, named: str | None) -> Callable[[], LookupOutcome]:
        request = _request_for(row, row.first_sent_at)
        if named and request.provider_refund_id is None:
            request = dataclasses.replace(request, provider_refund_id=named)
        return lambda: provider.lookup_refund(request)

    outcome = replays.ask(
        gateway,
        CallContext("refund_replay", sent.payment_id, key, attempt),
        CallContext("refund_lookup", sent.payment_id, key, attempt),
        resend=(lambda: provider.refund(sent)) if replays.may_replay(refund) else None,
        read=read,
        relock=lambda: lock_refund(refund_id),
        before=functools.partial(lifecycle.count_lookup, REFUND, refund),
    )
    if isinstance(outcome, Absent) and not provider.capabilities.supports_idempotency_keys:
        # The key-less provider has no such refund: it never happened; send it now (its
        # client looks up once more right before sending), through the breaker, recorded
        # as sent before it leaves.
        outcome = gateway.call(
            CallContext("refund_resend", sent.payment_id, key),
            lambda: provider.refund(sent),
            before=functools.partial(_mark_resend, refund_id),
        )
    refund = _release(refund_id)
    follow_up: FollowUp = _nothing
    if refund.status == RefundStatus.PROCESSING and isinstance(outcome, Absent):
        # The provider no longer knows a refund it had said was on its way: a person looks.
        move_refund(
            refund,
            RefundStatus.NEEDS_REVIEW,
            source=TransitionSource.RECONCILE,
            reason=f"the provider had the refund, now it has none: {outcome.reason}",
        )
    else:
        follow_up = lifecycle.judge_lookup(
            REFUND,
            refund,
            outcome,
            move_refund,
            lambda: _apply(refund, outcome, TransitionSource.RECONCILE),
        )
    db.session.commit()
    follow_up()


def _claim(
    refund_id: int, status: RefundStatus | tuple[RefundStatus, ...], now: datetime
) -> Refund | None:
    """Lease the refund if it is in `status` and nobody holds it (row locks in order)."""
    refund = lock_refund(refund_id)
    if (
        refund is None
        or refund.status not in (status if isinstance(status, tuple) else (status,))
        or (refund.lease_expires_at is not None and refund.lease_expires_at >= now)
    ):
        db.session.rollback()
        return None
    refund.lease_expires_at = lifecycle.lease_until(now)
    return refund


def _release(refund_id: int) -> Refund:
    refund = lock_refund(refund_id)
    assert refund is not None
    refund.lease_expires_at = None
    return refund


def _request_for(refund: Refund, first_sent_at: datetime | None) -> RefundRequest:
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


def _apply(refund: Refund, outcome: LookupOutcome, source: TransitionSource) -> FollowUp:
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
    return lifecycle.schedule_lookup(REFUND, refund, move_refund)


def _set_aside(refund: Refund, problem: str, source: TransitionSource) -> None:
    """An answer that does not match the refund moves nothing: review, and one count."""
    lifecycle.count_mismatch(refund.provider, source.value)
    move_refund(
        refund,
        RefundStatus.NEEDS_REVIEW,
        source=source,
        reason=f"the provider's answer does not match the refund: {problem}",
    )


LOOKED_UP = (RefundStatus.UNKNOWN, RefundStatus.PROCESSING)  # what reconcile_refund asks about


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


def sweep_refunds(now: datetime | None = None) -> int:
    """Enqueue pending refunds nobody works on, and unknown or processing refunds whose
    lookup is due (the janitor every kind shares: services/movements/janitor.py)."""
    return janitor.sweep_sends(REFUND, Refund, RefundStatus.PENDING, now) + janitor.sweep_lookups(
        REFUND, Refund, LOOKED_UP, now
    )
