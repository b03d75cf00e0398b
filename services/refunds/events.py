"""A provider's refund events, applied like payment events (services/webhooks/events.py): found by
our own reference, checked against the refund, moved through its state machine under
its row lock; a repeat or a late, contradicting event changes nothing or goes to review."""

from __future__ import annotations

import uuid
from typing import Any

from extensions import db
from models import (
    PaymentPurpose,
    PaymentStatus,
    ProcessedWebhook,
    Refund,
    RefundStatus,
    TransitionSource,
    WebhookState,
)
from models.money import KNOWN_CURRENCIES
from providers.events import ProviderEvent
from services.movements import locate, machine
from services.movements.kinds import LOOK_UP
from services.movements.locks import lock_found_payment, lock_refund
from services.platform.locales import money_text
from services.refunds.answers import await_provider, mismatch
from services.refunds.state import TABLE, move_refund, record_creation, take_from_wallet
from services.wallet.ledger import WalletError

OUTCOMES = {"succeeded": RefundStatus.SUCCEEDED, "failed": RefundStatus.FAILED}


def locate_refund(provider: str, event: ProviderEvent) -> tuple[int, int | None] | None:
    """(payment id, order id) of the refund the event names, or of the payment a refund
    made outside the shop is of: what a batch locks first (not locked here). Raises
    ValueError when the event names a refund of ours in a form that cannot be one."""
    found = locate.find(
        Refund, provider, event, Refund.provider_refund_id, Refund.payment_id, Refund.order_id
    )
    if found is not None and found.payment_id is not None:
        return found.payment_id, found.order_id
    return locate.parent_payment(provider, event)


def apply_refund_event(
    provider: str, event: ProviderEvent, record: ProcessedWebhook, located: Any = LOOK_UP
) -> str:
    """Apply a refund event in the caller's transaction; set record.state. (`located`,
    locate_refund's answer, only ordered the batch: the refund is found again, locked.)"""
    refund = _find(provider, event)
    if refund is None and event.report.our_id is None and event.report.reference is None:
        refund = _outside_refund(provider, event, record)
        if record.state == WebhookState.REJECTED:
            return record.state
    if refund is None:
        # Our own answer may not have stored the provider's refund id yet: keep it.
        record.state, record.note = WebhookState.PENDING, "refund not found yet"
        return record.state
    record.payment_id = refund.payment_id
    if event.outcome is None:
        # Still on its way (Stripe: pending): the refund waits for its next event.
        problem = mismatch(refund, event.provider_id, event.report)
        if problem or refund.status not in (RefundStatus.PENDING, RefundStatus.UNKNOWN):
            record.state, record.note = WebhookState.IGNORED, "the refund is still pending"
            return record.state
        await_provider(
            refund,
            event.provider_id or "",
            TransitionSource.WEBHOOK,
            f"{event.event_type} {event.event_id}: on its way",
        )
        record.state = WebhookState.APPLIED
        record.note = f"refund {refund.id}: processing"
        return record.state
    reason = f"{event.event_type} {event.event_id}"
    problem = mismatch(refund, event.provider_id, event.report)
    if problem:
        move_refund(
            refund,
            RefundStatus.NEEDS_REVIEW,
            source=TransitionSource.WEBHOOK,
            reason=f"{reason} does not match the refund: {problem}",
            actor=event.event_id,
        )
        record.state, record.note = WebhookState.APPLIED, f"report mismatch: {problem}"[:500]
        return record.state
    if refund.provider_refund_id is None:
        refund.provider_refund_id = event.provider_id
    status = OUTCOMES[event.outcome]
    if status == RefundStatus.FAILED and event.decline_code:
        refund.failure_code = refund.failure_code or event.decline_code[:64]
    was = refund.status
    is_moved = move_refund(
        refund, status, source=TransitionSource.WEBHOOK, reason=reason, actor=event.event_id
    )
    record.state = WebhookState.APPLIED
    record.note = machine.moved_note(TABLE, refund, was, is_moved)
    return record.state


def _find(provider: str, event: ProviderEvent) -> Refund | None:
    """Our refund id (Stripe's metadata.refund_id) or key (Braintree's order_id) first,
    then the provider's refund id (services/movements/locate.py); locked in the one lock
    order. Raises ValueError for a reference that cannot be ours (the event is set aside)."""
    found = locate.find(Refund, provider, event, Refund.provider_refund_id, Refund.id)
    return lock_refund(found.id) if found is not None else None


OUTSIDE_ACTOR = "provider dashboard"  # who made a refund found only in the provider's events


def _outside_refund(provider: str, event: ProviderEvent, record: ProcessedWebhook) -> Refund | None:
    """A refund made outside the shop (Stripe's Dashboard: no metadata of ours) of a
    payment of ours, matched by the payment's provider id: recorded as a refund, with
    its source, under the payment's lock; then applied like any refund event. One that
    cannot be ours (another currency, more than the payment) is rejected, nothing moved;
    a top-up's whose money was spent from the wallet goes to review."""
    if not event.parent_payment_id or not event.provider_id:
        return None
    located = locate.parent_payment(provider, event)
    if located is None:
        return None  # not a payment of ours (yet): pending, then ignored after the grace
    payment = lock_found_payment(*located)
    assert payment is not None
    amount, currency = event.report.amount_minor, (event.report.currency or "").upper()
    if (
        payment.status != PaymentStatus.SUCCEEDED
        or currency != payment.currency
        or not isinstance(amount, int)
        or not 0 < amount <= payment.amount_minor
    ):
        record.state = WebhookState.REJECTED
        theirs = (
            money_text(amount, currency)
            if isinstance(amount, int) and currency in KNOWN_CURRENCIES
            else f"{amount!r} {currency[:8]!r}"
        )
        record.note = (
            f"a refund of {event.parent_payment_id} that cannot be of payment {payment.id} "
            f"({payment.status.value}, {money_text(payment.amount_minor, payment.currency)}): "
            f"{theirs}"
        )[:500]
        return None
    refund = Refund(
        idempotency_key=uuid.uuid5(uuid.NAMESPACE_URL, f"{provider}:{event.provider_id}"),
        payment_id=payment.id,
        order_id=payment.order_id,
        provider=provider,
        amount_minor=amount,
        currency=currency,
        reason=f"refunded outside the shop ({provider}'s dashboard): {event.provider_id}",
        actor=OUTSIDE_ACTOR,
        provider_refund_id=event.provider_id,
        first_sent_at=event.created_at,
    )
    db.session.add(refund)
    db.session.flush()
    record_creation(refund, TransitionSource.WEBHOOK)
    if payment.purpose == PaymentPurpose.WALLET_TOPUP:
        try:
            take_from_wallet(refund, payment)
        except WalletError as exc:
            move_refund(
                refund,
                RefundStatus.NEEDS_REVIEW,
                source=TransitionSource.WEBHOOK,
                reason=f"refunded outside the shop, but the top-up was spent: {exc}",
            )
    return refund
