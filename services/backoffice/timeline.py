"""One payment's whole story for the dashboard, in order: the intent (where, key), each
provider call and its classified outcome, each webhook received (duplicates included),
each state change with its source and reason, refunds, emails; and the verdict, the
answer to "did the payment go through?" in one sentence."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from extensions import db
from models import (
    OPEN_REFUND_STATUSES,
    Dispute,
    DisputeTransition,
    EmailKind,
    OutboxMessage,
    Payment,
    PaymentStatus,
    PaymentTransition,
    ProcessedWebhook,
    ProviderCall,
    Refund,
    RefundStatus,
    RefundTransition,
    TransitionSource,
    WebhookState,
)
from services.platform.locales import money_text
from services.platform.retention import transitions_of

PAYMENT_EMAILS = (EmailKind.RECEIPT, EmailKind.PAYMENT_FAILED, EmailKind.REVIEW_ALERT)


@dataclass(frozen=True)
class Event:
    at: datetime
    kind: str  # intent | call | webhook | transition | refund | dispute | email | admin
    text: str


@dataclass(frozen=True)
class Story:
    payment: Payment
    verdict: str
    events: list[Event]
    refunded_minor: int = 0  # refunds that succeeded
    refunding_minor: int = 0  # refunds on their way (pending, unknown, processing)
    disputed_minor: int = 0  # taken back by the bank (a dispute's funds withdrawn)

    @property
    def captured_minor(self) -> int:
        return self.payment.amount_minor if self.payment.status == PaymentStatus.SUCCEEDED else 0

    @property
    def net_minor(self) -> int:
        """What the shop keeps: captured less what went back (or is on its way)."""
        return (
            self.captured_minor - self.refunded_minor - self.refunding_minor - self.disputed_minor
        )


def _utc(moment: datetime) -> str:
    return f"{moment:%H:%M:%S} UTC"


def story(payment_id: int, time_text: Callable[[datetime], str] = _utc) -> Story | None:
    """The payment's story; `time_text` writes the verdict's times (the console's zone)."""
    payment = db.session.get(Payment, payment_id)
    if payment is None:
        return None
    transitions = transitions_of(payment_id)
    refund_ids = select(Refund.id).where(Refund.payment_id == payment_id)
    calls = db.session.scalars(
        select(ProviderCall)
        .where(
            ((ProviderCall.subject_kind == "charge") & (ProviderCall.subject_id == payment_id))
            | ((ProviderCall.subject_kind == "refund") & ProviderCall.subject_id.in_(refund_ids))
        )
        .order_by(ProviderCall.started_at)
    ).all()
    webhooks = db.session.scalars(
        select(ProcessedWebhook)
        .where(ProcessedWebhook.payment_id == payment_id)
        .order_by(ProcessedWebhook.received_at)
    ).all()
    refunds = db.session.scalars(select(Refund).where(Refund.payment_id == payment_id)).all()
    disputes = db.session.scalars(select(Dispute).where(Dispute.payment_id == payment_id)).all()
    events = [
        _intent(payment),
        *_transition_events(transitions),
        *map(_call_event, calls),
        *(
            Event(
                hook.received_at,
                "webhook",
                f"webhook {hook.event_type} {hook.event_id}: {hook.state.value} ({hook.note})",
            )
            for hook in webhooks
        ),
        *_email_events(payment_id),
    ]
    for refund in refunds:
        label = f"refund #{refund.id} of {money_text(refund.amount_minor, refund.currency)}"
        events += _movement_events("refund", label, RefundTransition, refund.id)
    for dispute in disputes:
        label = (
            f"dispute #{dispute.id} ({dispute.provider_dispute_id}, {dispute.reason or '-'}) "
            f"of {money_text(dispute.amount_minor, dispute.currency)}"
        )
        events += _movement_events("dispute", label, DisputeTransition, dispute.id)
    events.sort(key=lambda e: e.at)
    return Story(
        payment,
        verdict(payment, transitions, webhooks, time_text),
        events,
        refunded_minor=sum(r.amount_minor for r in refunds if r.status == RefundStatus.SUCCEEDED),
        refunding_minor=sum(r.amount_minor for r in refunds if r.status in OPEN_REFUND_STATUSES)
        - sum(r.amount_minor for r in refunds if r.status == RefundStatus.SUCCEEDED),
        disputed_minor=sum(d.withdrawn_minor for d in disputes if d.is_effect_applied),
    )


def _intent(payment: Payment) -> Event:
    return Event(
        payment.created_at,
        "intent",
        f"intent recorded: {money_text(payment.amount_minor, payment.currency)} with "
        f"{payment.provider}, key {payment.idempotency_key}"
        + (f", order #{payment.order_id}" if payment.order_id else ", wallet top-up"),
    )


def _transition_events(transitions: Sequence[PaymentTransition]) -> list[Event]:
    """The payment's moves after its creation, a person's marked as theirs."""
    return [
        Event(
            t.created_at,
            "admin" if t.source == TransitionSource.ADMIN else "transition",
            f"{t.from_status} -> {t.to_status} by {t.source}"
            + (f" ({t.actor})" if t.actor else "")
            + f": {t.reason}",
        )
        for t in transitions
        if t.from_status is not None
    ]


def _call_event(call: ProviderCall) -> Event:
    answer = f"HTTP {call.http_status}" if call.http_status else (call.error or "no answer")
    attempt = f", attempt {call.attempt}" if call.attempt else ""
    return Event(
        call.started_at,
        "call",
        f"{call.operation} call{attempt} {call.endpoint or ''}: {call.outcome} "
        f"({answer}, {call.duration_ms:.0f} ms"
        + (f", request {call.request_id}" if call.request_id else "")
        + ")",
    )


def _email_events(payment_id: int) -> list[Event]:
    emails = db.session.scalars(
        select(OutboxMessage).where(
            OutboxMessage.subject_id == payment_id, OutboxMessage.kind.in_(PAYMENT_EMAILS)
        )
    )
    return [
        Event(
            email.created_at,
            "email",
            f"email {email.kind.value} to {email.recipient}: {email.status.value}",
        )
        for email in emails
    ]


def _movement_events(kind: str, label: str, model: Any, row_id: int) -> list[Event]:
    """A refund's or a dispute's transitions, each a line of the payment's story."""
    owner = getattr(model, f"{kind}_id")
    rows = db.session.scalars(select(model).where(owner == row_id).order_by(model.id)).all()
    return [
        Event(
            t.created_at,
            kind,
            f"{label}: {t.from_status or 'new'} -> {t.to_status} by {t.source}: {t.reason}",
        )
        for t in rows
    ]


def _charged(
    payment: Payment,
    moves: Sequence[PaymentTransition],
    hooks: Sequence[ProcessedWebhook],
    time_text: Callable[[datetime], str],
) -> str:
    """A succeeded payment's verdict: who confirmed it (the provider, a webhook, a person)."""
    confirmed = [
        t
        for t in moves
        if t.to_status == PaymentStatus.SUCCEEDED and t.source != TransitionSource.WEBHOOK
    ]
    by_hook = [h for h in hooks if h.state == WebhookState.APPLIED and "succeeded" in h.event_type]
    admin = [
        t
        for t in moves
        if t.to_status == PaymentStatus.SUCCEEDED and t.source == TransitionSource.ADMIN
    ]
    text = f"Charged once: {payment.provider_payment_id or 'no provider id'}"
    if admin:
        return f"{text}, decided by {admin[-1].actor} at {time_text(admin[-1].created_at)}."
    if confirmed:
        text += f", confirmed by the provider at {time_text(confirmed[0].created_at)}"
    if by_hook:
        text += f"{' and' if confirmed else ', confirmed'} by webhook {by_hook[0].event_id}"
    return text + "."


def verdict(
    payment: Payment,
    moves: Sequence[PaymentTransition],
    hooks: Sequence[ProcessedWebhook],
    time_text: Callable[[datetime], str] = _utc,
) -> str:
    """Did the payment go through? One sentence, from our own records."""
    last = moves[-1] if moves else None
    when = time_text(last.created_at) if last else "-"
    if payment.status == PaymentStatus.SUCCEEDED:
        return _charged(payment, moves, hooks, time_text)
    if payment.status == PaymentStatus.FAILED:
        why = payment.decline_code or (last.reason if last else "")
        return f"Not charged: {why} ({when})."
    if payment.status == PaymentStatus.UNKNOWN:
        return (
            f"Outcome unknown: asked the provider {payment.reconcile_attempts} times; next lookup "
            f"{time_text(payment.next_reconcile_at)}."
            if payment.next_reconcile_at
            else f"Outcome unknown: asked the provider {payment.reconcile_attempts} times."
        )
    if payment.status == PaymentStatus.NEEDS_REVIEW:
        return f"Needs a person: {last.reason if last else 'no reason recorded'}."
    if payment.status == PaymentStatus.REQUIRES_ACTION:
        return f"Waiting for the customer's bank (3-D Secure) since {when}."
    return "Not sent to the provider yet." if payment.first_sent_at is None else "Being sent."
