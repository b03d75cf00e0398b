"""Incoming provider events: verified, recorded once, applied under a row lock.

The web request verifies the signature and records the event (UNIQUE(provider,
event_id) turns every redelivery into a no-op), commits, queues its application
and answers: one INSERT and one enqueue, so a burst of deliveries costs little.
The apply job locks the event row and the payment; the effect and the event's
`applied` state commit together or not at all. An event whose job was lost stays
`pending` and is applied by the periodic retry.
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from flask import current_app
from redis.exceptions import RedisError
from sqlalchemy import bindparam, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError

from extensions import db, redis_client
from models import Payment, PaymentStatus, ProcessedWebhook, TransitionSource
from models.types import utcnow
from providers.events import (
    ProviderEvent,
    WebhookError,
    load_json_object,
    parse_acquirer,
    parse_stripe,
    verify_acquirer,
    verify_stripe,
)
from services import queueing
from services.payment_state import move

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WebhookScheme:
    verify: Callable[[Mapping[str, str], bytes, str, float], None]
    parse: Callable[[dict[str, Any]], ProviderEvent]
    secret_setting: str


SCHEMES = {
    "stripe": WebhookScheme(verify_stripe, parse_stripe, "STRIPE_WEBHOOK_SECRET"),
    "acquirer": WebhookScheme(verify_acquirer, parse_acquirer, "ACQUIRER_WEBHOOK_SECRET"),
}
OUTCOME_STATUS = {"succeeded": PaymentStatus.SUCCEEDED, "failed": PaymentStatus.FAILED}


class UnknownProviderError(LookupError):
    """No webhook endpoint for this provider."""


def scheme_for(provider: str) -> WebhookScheme:
    if provider not in current_app.config["PAYMENTS_PROVIDERS"] or provider not in SCHEMES:
        raise UnknownProviderError(provider)
    return SCHEMES[provider]


def receive(
    provider: str, headers: Mapping[str, str], body: bytes, now: float | None = None
) -> str:
    """Verify, parse and record one delivery; return accepted|duplicate.

    Raises UnknownProviderError or WebhookError (nothing written) for bad requests.
    """
    scheme = scheme_for(provider)
    secret = current_app.config[scheme.secret_setting]
    scheme.verify(headers, body, secret, time.time() if now is None else now)
    payload = load_json_object(body)
    return ingest(provider, scheme.parse(payload), payload)


def ingest(
    provider: str, event: ProviderEvent, payload: dict[str, Any], *, apply_now: bool = False
) -> str:
    """Record the event once; queue its application (or, in a job already, apply it in the
    same transaction with `apply_now`). Commits. Returns accepted|duplicate, or with
    `apply_now` the state apply_event set."""
    statement = _record_statement(db.engine.dialect.name)
    params = {
        "provider": provider,
        "event_id": event.event_id,
        "event_type": event.event_type,
        "payload": payload,
        "event_created_at": event.created_at,
        "received_at": utcnow(),
    }
    if not apply_now:
        # One statement, atomic on its own: autocommit saves the BEGIN and COMMIT trips.
        with db.engine.connect() as conn:
            autocommit = conn.execution_options(isolation_level="AUTOCOMMIT")
            record_id = autocommit.execute(statement, params).scalar()
        if record_id is None:
            return "duplicate"  # someone recorded it first (redelivery, another node)
        queueing.enqueue_webhook(record_id)
        return "accepted"
    record_id = db.session.execute(statement, params).scalar()
    if record_id is None:
        db.session.commit()
        return "duplicate"
    record = db.session.get(ProcessedWebhook, record_id)
    assert record is not None
    state = apply_event(provider, event, record)
    db.session.commit()
    return state


@functools.cache
def _record_statement(dialect: str) -> Any:
    """INSERT ... ON CONFLICT DO NOTHING RETURNING id, built once (it runs per delivery)."""
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    table = ProcessedWebhook.__table__
    columns = ("provider", "event_id", "event_type", "payload", "event_created_at", "received_at")
    return (
        insert(table)
        .values(
            {
                **{name: bindparam(name, type_=table.c[name].type) for name in columns},
                "state": "pending",
                "note": "received",
            }
        )
        .on_conflict_do_nothing(index_elements=["provider", "event_id"])
        .returning(table.c.id)
    )


def apply_recorded(record_id: int) -> str:
    """Apply one recorded event if it is still pending (the apply job). Commits."""
    record = db.session.scalar(
        select(ProcessedWebhook)
        .where(ProcessedWebhook.id == record_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    if record is None or record.state != "pending":
        db.session.rollback()  # applied by the periodic retry, or never recorded
        return "done" if record is not None else "missing"
    state = apply_event(record.provider, SCHEMES[record.provider].parse(record.payload), record)
    db.session.commit()
    return state


def apply_event(provider: str, event: ProviderEvent, record: ProcessedWebhook) -> str:
    """Apply an event to its (locked) payment in the caller's transaction; set record.state."""
    record.processed_at = utcnow()
    if event.outcome is None:
        record.state, record.note = "ignored", "event type has no effect on payments"
        return record.state
    payment = _find_payment(provider, event)
    if payment is None:
        # The charge job may not have stored the provider's id yet: keep it for later.
        record.state, record.note = "pending", "payment not found yet"
        record.processed_at = None
        return record.state
    record.payment_id = payment.id
    newest = db.session.scalar(
        select(func.max(ProcessedWebhook.event_created_at)).where(
            ProcessedWebhook.payment_id == payment.id,
            ProcessedWebhook.state == "applied",
            ProcessedWebhook.id != record.id,
        )
    )
    if newest is not None and event.created_at < newest:
        record.state = "ignored"
        record.note = f"older than the event applied for this payment at {newest.isoformat()}"
        return record.state
    reason = f"{event.event_type} {event.event_id}"
    if payment.provider_payment_id is None and event.provider_payment_id:
        payment.provider_payment_id = event.provider_payment_id
    elif event.provider_payment_id and payment.provider_payment_id != event.provider_payment_id:
        move(
            payment,
            PaymentStatus.NEEDS_REVIEW,
            source=TransitionSource.WEBHOOK,
            reason=f"{reason} is about provider payment {event.provider_payment_id}, "
            f"ours is {payment.provider_payment_id}",
            actor=event.event_id,
        )
        record.state, record.note = "applied", "second provider payment for one payment"
        return record.state
    status = OUTCOME_STATUS[event.outcome]
    if status == PaymentStatus.FAILED and payment.decline_code is None and event.decline_code:
        payment.decline_code = event.decline_code[:64]
    was = payment.status
    is_moved = move(
        payment, status, source=TransitionSource.WEBHOOK, reason=reason, actor=event.event_id
    )
    record.state = "applied"
    record.note = (
        f"{was.value} -> {payment.status.value}"
        if is_moved
        else f"no change: payment was {was.value}"
    )
    return record.state


def _find_payment(provider: str, event: ProviderEvent) -> Payment | None:
    """Our own reference first, then the provider's id; the row comes back locked."""
    condition = None
    if event.payment_id is not None:
        condition = Payment.id == event.payment_id
    elif event.reference is not None:
        try:
            condition = Payment.idempotency_key == uuid.UUID(event.reference)
        except ValueError:
            condition = None
    for where in (
        condition,
        Payment.provider_payment_id == event.provider_payment_id
        if event.provider_payment_id
        else None,
    ):
        if where is None:
            continue
        payment = db.session.scalar(
            select(Payment)
            .where(where, Payment.provider == provider)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
        if payment is not None:
            return payment
    return None


RETRY_BUDGET_S = 40.0  # one run stays well inside the 60 s job timeout


def retry_pending_events(batch: int = 100, budget_s: float = RETRY_BUDGET_S) -> int:
    """Apply pending events: their payment was not found yet, or their job was lost (Redis
    was down when they arrived). Walks every pending event once, a committed batch at a
    time, until the time budget runs out. Returns how many were applied."""
    deadline = time.monotonic() + budget_s
    applied, after_id = 0, 0
    while time.monotonic() < deadline:
        records = db.session.scalars(
            select(ProcessedWebhook)
            .where(ProcessedWebhook.state == "pending", ProcessedWebhook.id > after_id)
            .order_by(ProcessedWebhook.id)
            .limit(batch)
            .with_for_update(skip_locked=True)
        ).all()
        if not records:
            break
        for record in records:
            event = SCHEMES[record.provider].parse(record.payload)
            try:
                with db.session.begin_nested():  # one event that cannot apply blocks no other
                    state = apply_event(record.provider, event, record)
            except IntegrityError as exc:
                log.error("webhook event %s could not be applied: %s", record.event_id, exc.orig)
                continue
            if state != "pending":
                applied += 1
        after_id = records[-1].id
        db.session.commit()
    db.session.rollback()
    return applied


def backfill(provider_name: str, events: list[dict[str, Any]]) -> dict[str, int]:
    """Ingest events fetched from the provider's API (undelivered ones) through the same path."""
    counts: dict[str, int] = {}
    parse = SCHEMES[provider_name].parse
    for payload in events:
        try:
            event = parse(payload)
        except WebhookError as exc:
            log.warning("backfill: skipped a malformed %s event: %s", provider_name, exc)
            continue
        state = ingest(provider_name, event, payload, apply_now=True)
        counts[state] = counts.get(state, 0) + 1
    return counts


def duplicates_key(day: str) -> str:
    return f"webhooks:duplicates:{day}"


def record_duplicate(provider: str) -> None:
    """Count a redelivery for the dashboard (best effort: Redis may be down)."""
    try:
        key = duplicates_key(utcnow().date().isoformat())
        pipe = redis_client.client.pipeline(transaction=False)
        pipe.incr(key)
        pipe.expire(key, 3 * 24 * 3600)
        pipe.execute()
    except RedisError as exc:
        log.warning("could not count a duplicate %s webhook: %s", provider, exc)
