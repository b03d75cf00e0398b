"""Strong Customer Authentication (3-D Secure): the two jobs of a payment that waits for
its customer at the bank.

- After the customer comes back (`/payments/<id>/return`), a lookup asks the provider
  where the payment is now. The webhook may say it first: whichever comes first wins,
  the other finds the payment settled and changes nothing.
- A payment still waiting SCA_TIMEOUT_S after its first send is cancelled at the
  provider (idempotent) and fails, unless the provider answers that it succeeded. A
  cancel whose answer is lost makes the payment unknown, reconciled like any other.

Both hold the payment's lease while they talk to the provider (services/movements/engine.py).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from sqlalchemy import or_, select

from extensions import db
from models import Payment, PaymentStatus, TransitionSource
from models.types import utcnow
from providers.outcomes import ActionRequired, Declined, LookupOutcome, Succeeded, Unknown
from resilience.gateway import CallContext, is_refused
from services.movements import engine, lifecycle
from services.movements.locks import lock_payment
from services.payments.answers import apply_outcome
from services.payments.kind import CHARGE, request_for
from services.payments.state import move
from services.platform import autocommit, job_paths, queues
from services.platform.provider_clients import gateway_for, provider_for
from services.platform.queues import SWEEP_BATCH

CHECK_JOB = job_paths.CHECK_AUTHENTICATION
CANCEL_JOB = job_paths.CANCEL_ABANDONED
ABANDONED = "authentication_abandoned"  # the decline code of a cancelled payment
WAITING = (PaymentStatus.REQUIRES_ACTION,)


def request_check(payment: Payment) -> None:
    """The customer is back from the bank: look the payment up (one job at a time)."""
    if payment.status == PaymentStatus.REQUIRES_ACTION:
        queues.enqueue(
            payment.provider,
            CHECK_JOB,
            payment.id,
            job_id=f"authentication-check-{payment.id}",
        )


def check_authentication(payment_id: int) -> None:
    """Ask the provider where a payment that required action is now; apply a final or
    still-waiting answer. No answer changes nothing: the webhook or the sweep settles it."""
    outcome = _call(payment_id, "lookup", due_before=None)
    if outcome is None:
        return
    payment = _release(payment_id)
    follow_up = None
    if isinstance(outcome, Succeeded | Declined | ActionRequired):
        follow_up = apply_outcome(
            CHARGE, payment, outcome, TransitionSource.RECONCILE, payment.first_sent_at
        )
    db.session.commit()
    if follow_up is not None:
        follow_up()


def cancel_abandoned(payment_id: int) -> None:
    """Cancel a payment whose customer did not authenticate in time (the sweep's job)."""
    outcome = _call(payment_id, "cancel", due_before=utcnow())
    if outcome is None:
        return
    payment = _release(payment_id)
    follow_up = None
    if isinstance(outcome, Declined) and outcome.code == "canceled":
        outcome = dataclasses.replace(outcome, code=ABANDONED)
    if isinstance(outcome, Succeeded | Declined | ActionRequired):
        follow_up = apply_outcome(
            CHARGE, payment, outcome, TransitionSource.RECONCILE, payment.first_sent_at
        )
    elif isinstance(outcome, Unknown):
        # The cancel may have reached the provider: only it can say what happened now.
        payment.last_error = f"cancel: {outcome.reason}"[:500]
        if move(
            payment,
            PaymentStatus.UNKNOWN,
            source=TransitionSource.RECONCILE,
            reason=f"cancel of an abandoned authentication, answer lost: {outcome.reason}",
        ):
            follow_up = lifecycle.schedule_lookup(CHARGE, payment)
    # NotSent (provider unreachable, circuit open): still waiting; the next sweep retries.
    db.session.commit()
    if follow_up is not None:
        follow_up()


def _call(payment_id: int, what: str, due_before: datetime | None) -> LookupOutcome | None:
    """Lease a payment that requires action (and, for a cancel, is due), ask the provider
    through its gateway; None when there was nothing to do or nobody could be asked."""
    try:
        claimed = engine.claim(CHARGE, payment_id, utcnow(), statuses=WAITING)
    except autocommit.ConnectionLost:
        return None  # the lease's expiry and the next sweep or return recover it
    if claimed is None:
        return None
    payment = lock_payment(payment_id)
    assert payment is not None
    is_due = due_before is None or (
        payment.next_reconcile_at is not None and payment.next_reconcile_at <= due_before
    )
    if not is_due:
        payment.lease_expires_at = None
        db.session.commit()
        return None
    request = request_for(payment, payment.first_sent_at)
    name = payment.provider
    db.session.commit()
    provider = provider_for(name)
    context = CallContext(what, payment_id, request.idempotency_key, kind=CHARGE.name)
    ask = provider.cancel if what == "cancel" else provider.lookup
    outcome = gateway_for(name).call(context, lambda: ask(request))
    if is_refused(outcome):
        _release(payment_id)  # nobody could be asked: the next sweep or return tries again
        db.session.commit()
        return None
    return outcome


def _release(payment_id: int) -> Payment:
    payment: Payment = engine.release(CHARGE, payment_id)
    return payment


def sweep_abandoned(now: datetime | None = None) -> int:
    """Enqueue the cancel of every payment whose customer's time to authenticate is up."""
    now = now or utcnow()
    rows = db.session.execute(
        select(Payment.id, Payment.provider)
        .where(
            Payment.status == PaymentStatus.REQUIRES_ACTION,
            Payment.next_reconcile_at <= now,
            or_(Payment.lease_expires_at.is_(None), Payment.lease_expires_at < now),
        )
        .order_by(Payment.next_reconcile_at)
        .limit(SWEEP_BATCH)
    ).all()
    db.session.rollback()
    for payment_id, provider in rows:
        queues.enqueue(
            provider,
            CANCEL_JOB,
            payment_id,
            job_id=f"authentication-cancel-{payment_id}",
            is_started_job_dead=True,
        )
    return len(rows)
