"""The refund and refund-reconcile jobs, on the provider's queue, through its gateway.

The same three steps as a charge (services/charging.py): lease the refund and record
"may have been sent" (commit), call the provider with no transaction open, apply the
answer through the refund's state machine (commit). An unknown answer is resolved by
asking the provider, with the same delays and escalation as a charge's.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime, timedelta

from flask import current_app
from sqlalchemy import or_, select

from extensions import db
from models import Payment, Refund, RefundStatus, TransitionSource
from models.money import KNOWN_CURRENCIES
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
from resilience.gateway import CIRCUIT_OPEN, CallContext
from services import queueing
from services.locales import money_text
from services.provider_clients import gateway_for, provider_for
from services.refund_state import lock_refund, move_refund
from services.refunds import REFUND_JOB, refund_job_id
from services.sweeps import SWEEP_BATCH

RECONCILE_REFUND_JOB = "jobs.refunds.reconcile_refund_job"
FollowUp = Callable[[], object]


def _nothing() -> None:
    return None


def send_refund(refund_id: int) -> None:
    """Ask the provider to refund a pending refund once (returns early otherwise)."""
    now = utcnow()
    refund = _claim(refund_id, RefundStatus.PENDING, now)
    if refund is None:
        return
    gateway = gateway_for(refund.provider)
    decision = gateway.admit()
    if not decision.is_allowed:
        refund.lease_expires_at = None
        follow_up = _defer(refund, NotSent(CIRCUIT_OPEN, is_provider_failure=False))
        db.session.commit()
        follow_up()
        return
    previously_sent = refund.first_sent_at
    refund.first_sent_at = previously_sent or now
    refund.send_count += 1
    request = _request_for(refund, previously_sent)
    provider = provider_for(refund.provider)
    db.session.commit()
    context = CallContext("refund", request.payment_id, request.idempotency_key)
    outcome = gateway.call(decision, context, lambda: provider.refund(request))
    refund = _release(refund_id)
    if isinstance(outcome, NotSent):
        refund.first_sent_at, refund.send_count = previously_sent, refund.send_count - 1
        follow_up = _defer(refund, outcome)
    else:
        follow_up = _apply(refund, outcome, TransitionSource.CHARGE)
    db.session.commit()
    follow_up()


def reconcile_refund(refund_id: int) -> None:
    """Ask the provider what happened to an unknown refund; resolve, ask later or escalate."""
    now = utcnow()
    refund = _claim(refund_id, RefundStatus.UNKNOWN, now)
    if refund is None:
        return
    gateway = gateway_for(refund.provider)
    decision = gateway.admit()
    if not decision.is_allowed:
        refund.lease_expires_at = None
        later = _schedule_lookup(refund, current_app.config["CHARGE_DEFER_S"])
        db.session.commit()
        later()
        return
    refund.reconcile_attempts += 1
    request = _request_for(refund, refund.first_sent_at)
    provider = provider_for(refund.provider)
    db.session.commit()
    context = CallContext("refund_lookup", request.payment_id, request.idempotency_key)
    outcome: LookupOutcome = gateway.call(
        decision, context, lambda: provider.lookup_refund(request)
    )
    if isinstance(outcome, Absent) and not provider.capabilities.supports_idempotency_keys:
        # The key-less provider has no such refund: it never happened; send it now (its
        # client looks up once more right before sending), through the breaker.
        resend = gateway.admit()
        if resend.is_allowed:
            context = CallContext("refund_resend", request.payment_id, request.idempotency_key)
            outcome = gateway.call(resend, context, lambda: provider.refund(request))
    refund = _release(refund_id)
    if isinstance(outcome, Absent):
        follow_up: FollowUp = _nothing
        move_refund(
            refund,
            RefundStatus.FAILED,
            source=TransitionSource.RECONCILE,
            reason=f"provider has no record of the refund: {outcome.reason}",
        )
    else:
        follow_up = _apply(refund, outcome, TransitionSource.RECONCILE)
    db.session.commit()
    follow_up()


def _claim(refund_id: int, status: RefundStatus, now: datetime) -> Refund | None:
    """Lease the refund if it is in `status` and nobody holds it (row locks in order)."""
    refund = lock_refund(refund_id)
    if (
        refund is None
        or refund.status != status
        or (refund.lease_expires_at is not None and refund.lease_expires_at >= now)
    ):
        db.session.rollback()
        return None
    refund.lease_expires_at = now + timedelta(seconds=current_app.config["PAYMENT_LEASE_S"])
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
    )


def mismatch(
    refund: Refund, provider_refund_id: str | None, report: Report, *, is_success: bool = True
) -> str:
    """What in the provider's answer is not the refund we asked for ('' when all is). A
    success must say all of it; a refusal is checked on what it says (Stripe's 400 for
    a create names no refund at all: nothing was refunded, and it is a failure)."""
    if not is_success and provider_refund_id is None:
        return ""  # a refusal of the create: no refund exists to contradict ours
    problems = []
    if report.amount_minor != refund.amount_minor and (is_success or report.amount_minor):
        theirs = report.currency if report.currency in KNOWN_CURRENCIES else refund.currency
        problems.append(
            f"amount {money_text(report.amount_minor or 0, theirs)} != "
            f"{money_text(refund.amount_minor, refund.currency)}"
        )
    if report.currency != refund.currency and (is_success or report.currency):
        problems.append(f"currency {report.currency} != {refund.currency}")
    ours = {str(refund.id), str(refund.idempotency_key)}
    says_whose = report.payment_ref is not None or report.reference is not None
    if not ({report.payment_ref, report.reference} & ours) and (is_success or says_whose):
        problems.append("the answer does not name our refund")
    if refund.provider_refund_id and provider_refund_id != refund.provider_refund_id:
        problems.append(f"refund id {provider_refund_id} != {refund.provider_refund_id}")
    return "; ".join(problems)


def _apply(refund: Refund, outcome: LookupOutcome, source: TransitionSource) -> FollowUp:
    if isinstance(outcome, Succeeded | Declined):
        problem = mismatch(
            refund,
            outcome.provider_payment_id,
            outcome.report,
            is_success=isinstance(outcome, Succeeded),
        )
        if problem:
            move_refund(
                refund,
                RefundStatus.NEEDS_REVIEW,
                source=source,
                reason=f"the provider's answer does not match the refund: {problem}",
            )
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
    if isinstance(outcome, Unknown) and refund.status == RefundStatus.PENDING:
        move_refund(refund, RefundStatus.UNKNOWN, source=source, reason=outcome.reason)
    if refund.status != RefundStatus.UNKNOWN:
        return _nothing
    return _schedule_lookup(refund)


def _defer(refund: Refund, outcome: NotSent) -> FollowUp:
    delay_s = (outcome.retry_after_s or current_app.config["CHARGE_DEFER_S"]) * random.uniform(
        1.0, 1.3
    )
    refund.next_attempt_at = utcnow() + timedelta(seconds=delay_s)
    refund.last_error = outcome.reason[:500]
    refund_id, provider = refund.id, refund.provider
    job_id = refund_job_id(refund_id, f"-at-{int(refund.next_attempt_at.timestamp())}")
    return lambda: queueing.enqueue(provider, REFUND_JOB, refund_id, job_id=job_id, delay_s=delay_s)


def _schedule_lookup(refund: Refund, delay_s: float | None = None) -> FollowUp:
    """The next lookup with a growing delay, or needs_review in time (as for charges)."""
    config = current_app.config
    delays, attempts = config["RECONCILE_DELAYS_S"], refund.reconcile_attempts
    delay_s = (delay_s or delays[min(attempts, len(delays) - 1)]) * random.uniform(1.0, 1.2)
    due = utcnow() + timedelta(seconds=delay_s)
    window_s = provider_for(refund.provider).capabilities.replay_window_s
    deadline = (
        refund.first_sent_at + timedelta(seconds=window_s)
        if window_s and refund.first_sent_at
        else None
    )
    if attempts >= config["RECONCILE_MAX_ATTEMPTS"] or (deadline and due > deadline):
        refund.next_reconcile_at = None
        move_refund(
            refund,
            RefundStatus.NEEDS_REVIEW,
            source=TransitionSource.RECONCILE,
            reason=f"refund still unknown after {attempts} lookups; last answer: "
            f"{refund.last_error or 'none'}",
        )
        return _nothing
    refund.next_reconcile_at = due
    refund_id, provider = refund.id, refund.provider
    job_id = f"refund-reconcile-{refund_id}-{attempts}"
    return lambda: queueing.enqueue(
        provider, RECONCILE_REFUND_JOB, refund_id, job_id=job_id, delay_s=delay_s
    )


def sweep_refunds(now: datetime | None = None) -> int:
    """Enqueue pending refunds nobody works on, and unknown refunds whose lookup is due."""
    now = now or utcnow()
    stale = now - timedelta(seconds=current_app.config["PENDING_SWEEP_GRACE_S"])
    free = or_(Refund.lease_expires_at.is_(None), Refund.lease_expires_at < now)
    pending = db.session.execute(
        select(Refund.id, Refund.provider)
        .where(
            Refund.status == RefundStatus.PENDING,
            free,
            or_(Refund.next_attempt_at.is_(None), Refund.next_attempt_at < stale),
            Refund.updated_at < stale,
        )
        .limit(SWEEP_BATCH)
    ).all()
    unknown = db.session.execute(
        select(Refund.id, Refund.provider, Refund.reconcile_attempts)
        .where(
            Refund.status == RefundStatus.UNKNOWN,
            free,
            or_(Refund.next_reconcile_at.is_(None), Refund.next_reconcile_at <= now),
        )
        .limit(SWEEP_BATCH)
    ).all()
    db.session.rollback()
    for refund_id, provider in pending:
        queueing.enqueue(
            provider,
            REFUND_JOB,
            refund_id,
            job_id=refund_job_id(refund_id),
            is_started_job_dead=True,
        )
    for refund_id, provider, attempts in unknown:
        queueing.enqueue(
            provider,
            RECONCILE_REFUND_JOB,
            refund_id,
            job_id=f"refund-reconcile-{refund_id}-{attempts}",
            is_started_job_dead=True,
        )
    return len(pending) + len(unknown)
