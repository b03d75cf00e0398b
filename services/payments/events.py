"""A provider's payment events (the charge kind's, services/payments/kind.py): found by
our own reference or the provider's id, checked against the payment, moved through its
state machine under its row lock; an event older than one applied changes nothing."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from extensions import db
from models import Payment, PaymentStatus, ProcessedWebhook, TransitionSource, WebhookState
from providers.events import ProviderEvent
from services.movements import locate
from services.movements.kinds import LOOK_UP
from services.movements.locks import lock_found_payment
from services.payments import answers, attempts
from services.payments.state import move

OUTCOME_STATUS = {"succeeded": PaymentStatus.SUCCEEDED, "failed": PaymentStatus.FAILED}


def locate_payment(provider: str, event: ProviderEvent) -> tuple[int, int | None] | None:
    """(id, order id) of the event's payment, not locked (services/movements/locate.py).
    Raises ValueError when the event names a payment of ours in a form that cannot be
    one (it is set aside, never retried)."""
    if event.outcome is None:
        return None
    found = locate.find(
        Payment, provider, event, Payment.provider_payment_id, Payment.id, Payment.order_id
    )
    return (found.id, found.order_id) if found is not None else None


def apply_payment_event(
    provider: str, event: ProviderEvent, record: ProcessedWebhook, located: Any = LOOK_UP
) -> str:
    """Apply an event to its (locked) payment in the caller's transaction; set record.state.
    `located`: what locate_payment answered for it already (a batch sorts by it)."""
    if event.outcome is None:
        record.state, record.note = WebhookState.IGNORED, "event type has no effect on payments"
        return record.state
    try:
        if located is LOOK_UP:
            located = locate_payment(provider, event)
        payment = lock_found_payment(*located) if located is not None else None
    except ValueError as exc:
        record.state, record.note = WebhookState.REJECTED, str(exc)[:500]
        return record.state
    if payment is None:
        # The charge job may not have stored the provider's id yet: keep it for later.
        record.state, record.note = WebhookState.PENDING, "payment not found yet"
        return record.state
    status = OUTCOME_STATUS[event.outcome]
    record.state, record.note = _apply_to(payment, status, event, record.id)
    record.payment_id = payment.id  # with its state: the record's row is written once
    return record.state


def _apply_to(
    payment: Payment, status: PaymentStatus, event: ProviderEvent, record_id: int
) -> tuple[WebhookState, str]:
    """What the event (which says `status`) does to its locked payment, and the note on
    its record."""
    newest = db.session.scalar(
        select(func.max(ProcessedWebhook.event_created_at)).where(
            ProcessedWebhook.payment_id == payment.id,
            ProcessedWebhook.state == WebhookState.APPLIED,
            ProcessedWebhook.id != record_id,
        )
    )
    if newest is not None and event.created_at < newest:
        return (
            WebhookState.IGNORED,
            f"older than the event applied for this payment at {newest.isoformat()}",
        )
    reason = f"{event.event_type} {event.event_id}"
    problem = answers.mismatch(
        payment,
        event.provider_id,
        event.report,
        is_success=status == PaymentStatus.SUCCEEDED,
    )
    if problem:
        answers.set_aside(
            payment, problem, source=TransitionSource.WEBHOOK, what=reason, actor=event.event_id
        )
        return WebhookState.APPLIED, f"{answers.MISMATCH_PREFIX}: {problem}"[:500]
    if payment.provider_payment_id is None and event.provider_id:
        payment.provider_payment_id = event.provider_id
    if status == PaymentStatus.FAILED and payment.decline_code is None and event.decline_code:
        payment.decline_code = event.decline_code[:64]
    was = payment.status
    is_moved = move(
        payment,
        status,
        source=TransitionSource.WEBHOOK,
        reason=reason,
        actor=event.event_id,
        may_reverse=event.takes_back_success,
    )
    if is_moved and payment.status == PaymentStatus.FAILED and not event.takes_back_success:
        # A decline the provider reports later (3-D Secure failed): card testing counts
        # declines from every source, not only a send's answer.
        attempts.count_decline(payment, None)
    note = (
        f"{was.value} -> {payment.status.value}"
        if is_moved
        else f"no change: payment was {was.value}"
    )
    return WebhookState.APPLIED, note
