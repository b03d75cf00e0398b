"""A provider's dispute events, applied like every event (services/webhooks/events.py):
the dispute is found by the provider's id, or recorded the first time one of its
events names a payment of ours; it moves through its state machine under the lock of
its payment (so two events of one dispute never both record it), and the effect
follows its status. A dispute that cannot be of the payment (another currency, more
than was charged) is rejected and moves nothing; one of a payment not found yet waits,
like any event, and is ignored after the grace period, as does one of a payment not
settled yet; a dispute of a payment that never took money (failed, in review) is
rejected: only money we received can be disputed."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from extensions import db
from models import (
    Dispute,
    DisputeStatus,
    EmailKind,
    Payment,
    PaymentStatus,
    ProcessedWebhook,
    TransitionSource,
    WebhookState,
)
from models.money import KNOWN_CURRENCIES
from providers.events import DisputeFacts, ProviderEvent
from services.disputes.state import TABLE, move_dispute, record_creation, settle_effect
from services.movements import kinds, locate, machine
from services.movements.locks import lock_dispute, lock_found_payment
from services.notifications.outbox import queue_email
from services.platform.locales import money_text

# A payment not settled yet: whether it took money is for its lookup to tell.
UNSETTLED = (PaymentStatus.PENDING, PaymentStatus.UNKNOWN, PaymentStatus.REQUIRES_ACTION)
STATUSES = {
    status.value: status for status in DisputeStatus if status != DisputeStatus.NEEDS_REVIEW
}


def apply_dispute_event(
    provider: str, event: ProviderEvent, record: ProcessedWebhook, located: Any = kinds.LOOK_UP
) -> str:
    """Apply a dispute event in the caller's transaction; set record.state. `located`:
    its payment as locate.parent_payment answered already (a batch sorts by it)."""
    facts = event.dispute
    assert facts is not None and event.provider_id is not None
    status: DisputeStatus | None = STATUSES.get(facts.status)
    if status is None:
        record.state = WebhookState.IGNORED
        record.note = f"unknown dispute status {facts.status[:32]!r}: nothing moved"
        return record.state
    if located is kinds.LOOK_UP:
        located = locate.parent_payment(provider, event)
    payment = lock_found_payment(*located) if located is not None else None
    if payment is None:
        record.state, record.note = WebhookState.PENDING, "payment of the dispute not found yet"
        return record.state
    record.payment_id = payment.id
    reason = f"{event.event_type} {event.event_id}"
    dispute_id = db.session.scalar(
        select(Dispute.id).where(
            Dispute.provider == provider, Dispute.provider_dispute_id == event.provider_id
        )
    )
    # the one lock order (services/movements/locks.py): its payment is held already
    dispute = lock_dispute(dispute_id) if dispute_id is not None else None
    if dispute is None:
        if payment.status in UNSETTLED:
            # Whether it took money, only the lookup of the payment will tell.
            record.state = WebhookState.PENDING
            record.note = f"payment {payment.id} is {payment.status.value}: the dispute waits"
            return record.state
        problem = _cannot_be_of(payment, facts)
        if problem:
            record.state, record.note = WebhookState.REJECTED, problem[:500]
            return record.state
        dispute = _open(provider, event, payment, status, reason)
        record.state, record.note = (
            WebhookState.APPLIED,
            f"dispute {dispute.id} opened: {status.value}",
        )
        return record.state
    if facts.evidence_due_by is not None:
        dispute.evidence_due_by = facts.evidence_due_by
    if facts.amount_minor != dispute.amount_minor or facts.currency != dispute.currency:
        status = DisputeStatus.NEEDS_REVIEW
        reason += (
            f" says {facts.amount_minor!r} {facts.currency!r}, the dispute was "
            f"{money_text(dispute.amount_minor, dispute.currency)}"
        )
    escalated = dispute.is_inquiry and not facts.is_inquiry
    if escalated:
        dispute.is_inquiry = False  # a chargeback now: its money moves (never back)
    was = dispute.status
    is_moved = move_dispute(
        dispute,
        payment,
        status,
        source=TransitionSource.WEBHOOK,
        reason=reason,
        actor=event.event_id,
    )
    if escalated and not is_moved:
        settle_effect(dispute, payment)  # the same status, now of a chargeback
    record.state = WebhookState.APPLIED
    record.note = machine.moved_note(TABLE, dispute, was, is_moved)
    return record.state


def _cannot_be_of(payment: Payment, facts: DisputeFacts) -> str | None:
    if payment.status != PaymentStatus.SUCCEEDED:
        # A dispute takes back money we received: a payment that never took any (failed,
        # or in review, where a person decides) has none to lose.
        return (
            f"payment {payment.id} is {payment.status.value}: it took no money a dispute "
            "could take back"
        )
    amount, currency = facts.amount_minor, facts.currency or ""
    if (
        currency == payment.currency
        and isinstance(amount, int)
        and 0 < amount <= payment.amount_minor
    ):
        return None
    theirs = (
        money_text(amount, currency)
        if isinstance(amount, int) and currency in KNOWN_CURRENCIES
        else f"{amount!r} {currency[:8]!r}"
    )
    return (
        f"a dispute of {theirs} cannot be of payment {payment.id} "
        f"({money_text(payment.amount_minor, payment.currency)})"
    )


def _open(
    provider: str, event: ProviderEvent, payment: Payment, status: DisputeStatus, reason: str
) -> Dispute:
    """Record the dispute as its first event found says, apply its effect, tell the admins."""
    facts = event.dispute
    assert facts is not None and facts.amount_minor is not None and facts.currency is not None
    dispute = Dispute(
        provider=provider,
        provider_dispute_id=event.provider_id,
        payment_id=payment.id,
        amount_minor=facts.amount_minor,
        currency=facts.currency,
        status=status,
        reason=facts.reason,
        evidence_due_by=facts.evidence_due_by,
        is_inquiry=facts.is_inquiry,
        withdrawn_minor=0,
        withdrawals=0,
        is_effect_applied=False,
    )
    db.session.add(dispute)
    db.session.flush()
    record_creation(
        dispute,
        TransitionSource.WEBHOOK,
        f"opened by the bank ({facts.reason}): {reason}",
        event.event_id,
    )
    settle_effect(dispute, payment)
    queue_email(EmailKind.DISPUTE_ALERT, dispute.id)
    return dispute


# A dispute is no kind we send: only its events move it (services/movements/kinds.py).
kinds.on_events("dispute", apply_dispute_event, locate.parent_payment)
