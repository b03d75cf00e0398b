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
    calls = db.session.scalars(
        select(ProviderCall)
        .where(ProviderCall.payment_id == payment_id)
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
        Event(
            payment.created_at,
            "intent",
            f"intent recorded: {money_text(payment.amount_minor, payment.currency)} with "
            f"{payment.provider}, "
            f"key {payment.idempotency_key}"
            + (f", order #{payment.order_id}" if payment.order_id else ", wallet top-up"),
        )
    ]
    for t in transitions:
        if t.from_status is None:
            continue
        kind = "admin" if t.source == TransitionSource.ADMIN else "transition"
        who = f" ({t.actor})" if t.actor else ""
        events.append(
            Event(
                t.created_at,
                kind,
                f"{t.from_status} -> {t.to_status} by {t.source}{who}: {t.reason}",
            )
        )
    for call in calls:
        answer = f"HTTP {call.http_status}" if call.http_status else (call.error or "no answer")
        attempt = f", attempt {call.attempt}" if call.attempt else ""
        events.append(
            Event(
                call.started_at,
                "call",
                f"{call.operation} call{attempt} {call.endpoint or ''}: {call.outcome} "
                f"({answer}, {call.duration_ms:.0f} ms"
                + (f", request {call.request_id}" if call.request_id else "")
                + ")",
            )
        )
    for hook in webhooks:
        events.append(
            Event(
                hook.received_at,
                "webhook",
                f"webhook {hook.event_type} {hook.event_id}: {hook.state.value} ({hook.note})",
            )
        )
    for refund in refunds:
        label = f"refund #{refund.id} of {money_text(refund.amount_minor, refund.currency)}"
        events += _movement_events("refund", label, RefundTransition, refund.id)
    for dispute in disputes:
        label = (
            f"dispute #{dispute.id} ({dispute.provider_dispute_id}, {dispute.reason or '-'}) "
            f"of {money_text(dispute.amount_minor, dispute.currency)}"
        )
        events += _movement_events("dispute", label, DisputeTransition, dispute.id)
    for email in db.session.scalars(
        select(OutboxMessage).where(
            OutboxMessage.subject_id == payment_id, OutboxMessage.kind.in_(PAYMENT_EMAILS)
        )
    ):
        events.append(
            Event(
                email.created_at,
                "email",
                f"email {email.kind.value} to {email.recipient}: {email.status.value}",
            )
        )
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
        confirmed = [
            t
            for t in moves
            if t.to_status == PaymentStatus.SUCCEEDED and t.source != TransitionSource.WEBHOOK
        ]
        by_hook = [
            h for h in hooks if h.state == WebhookState.APPLIED and "succeeded" in h.event_type
        ]
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
