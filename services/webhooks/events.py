"""Incoming provider events: verified, recorded once, applied under a row lock.

The web request verifies the signature and records the event (UNIQUE(provider,
event_id) turns every redelivery into a no-op), commits, queues its application
and answers: one INSERT and one enqueue, so a burst of deliveries costs little.
The apply job locks the event row and the payment; the effect and the event's
`applied` state commit together or not at all. An event whose job was lost stays
`pending` and is applied by the periodic retry.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import psycopg
from flask import current_app
from sqlalchemy import select, text
from sqlalchemy.exc import DataError, IntegrityError

# Every kind's declaration, registered with its event handler (and a dispute's, a payout's).
import services.disputes.events
import services.payments.kind
import services.payouts.events
import services.refunds.kind  # noqa: F401
from extensions import db
from models import ProcessedWebhook, WebhookState
from models.types import utcnow
from providers.events import ProviderEvent, WebhookError
from providers.registry import PROVIDERS
from providers.spec import WebhookScheme
from services.movements import kinds
from services.platform import autocommit, day_counts, metrics, queues
from settings import settings

log = logging.getLogger(__name__)


RECEIVED = "received"  # the note of an event recorded and not applied yet
# Once per (provider, event id): a redelivery inserts nothing and returns no row. The
# lean path runs it on the autocommit pool; a job applying at once, in its transaction.
_RECORD_SQL = """
INSERT INTO processed_webhooks (provider, event_id, event_type, payload, event_created_at,
    received_at, state, note)
VALUES (:provider, :event_id, :event_type, CAST(:payload AS json), :event_created_at,
    :received_at, :pending, :note)
ON CONFLICT (provider, event_id) DO NOTHING
RETURNING id
"""
_RECORD = autocommit.plain(_RECORD_SQL)
_RECORD_IN_SESSION = text(_RECORD_SQL)


class UnknownProviderError(LookupError):
    """No webhook endpoint for this provider."""


def scheme_for(provider: str) -> WebhookScheme:
    """The webhook scheme of an enabled provider (providers/<name>/, via the registry)."""
    if provider not in settings().payments.providers or provider not in PROVIDERS:
        raise UnknownProviderError(provider)
    return PROVIDERS[provider].webhook


def receive(
    provider: str, headers: Mapping[str, str], body: bytes, now: float | None = None
) -> str:
    """Verify, parse and record one delivery; return accepted|duplicate.

    Raises UnknownProviderError or WebhookError (nothing written) for bad requests.
    """
    scheme = scheme_for(provider)
    _verify(scheme, headers, body, time.time() if now is None else now)
    payload = scheme.load(body)
    return ingest(provider, scheme.parse(payload), payload)


def _verify(scheme: WebhookScheme, headers: Mapping[str, str], body: bytes, now: float) -> None:
    """Against the current secret, then, during a rotation, the one being retired
    (`<SECRET>_PREVIOUS`); raises the current secret's WebhookError if neither matches."""
    config = current_app.config
    secrets = (config[scheme.secret_setting], config.get(f"{scheme.secret_setting}_PREVIOUS"))
    errors: list[WebhookError] = []
    for secret in filter(None, secrets):
        try:
            scheme.verify(headers, body, secret, now)
            return
        except WebhookError as exc:
            errors.append(exc)
    raise errors[0]


def ingest(
    provider: str, event: ProviderEvent, payload: dict[str, Any], *, apply_now: bool = False
) -> str:
    """Record the event once; queue its application (or, in a job already, apply it in the
    same transaction with `apply_now`). Commits. Returns accepted|duplicate, or with
    `apply_now` the state apply_event set."""
    params = {
        "provider": provider,
        "event_id": event.event_id,
        "event_type": event.event_type,
        "payload": json.dumps(payload),  # as SQLAlchemy's JSON type writes it
        "event_created_at": event.created_at,
        "received_at": utcnow(),
        "pending": WebhookState.PENDING.value,
        "note": RECEIVED,
    }
    if not apply_now:
        # One statement, atomic on its own, on the lean paths' autocommit pool (no BEGIN,
        # COMMIT or liveness ping). A dropped connection: once more (a first try that did
        # commit makes this one a duplicate; the retry sweep applies the event). Dropped
        # twice: ConnectionLost, and the provider redelivers.
        recorded = autocommit.first_row_retried(_RECORD, params)
        record_id = recorded[0] if recorded is not None else None
        if record_id is None:
            return "duplicate"  # someone recorded it first (redelivery, another node)
        queues.ring_webhooks()  # the application job, unless one is waiting
        return "accepted"
    record_id = db.session.execute(_RECORD_IN_SESSION, params).scalar()
    if record_id is None:
        db.session.commit()
        return "duplicate"
    record = db.session.get(ProcessedWebhook, record_id)
    assert record is not None
    state = _apply_or_reject(record)
    db.session.commit()
    return state


def apply_recorded(record_id: int) -> str:
    """Apply one recorded event if it is still pending (the apply job). Commits."""
    record = _lock_record(record_id)
    if record is None or record.state != WebhookState.PENDING:
        db.session.rollback()  # applied by the periodic retry, or never recorded
        return "done" if record is not None else "missing"
    record_id, provider, event_id = record.id, record.provider, record.event_id
    try:
        # No savepoint on this path (it is every delivery's): a failure rolls the whole
        # transaction back, and the event is set aside in a new one.
        state = apply_event(provider, PROVIDERS[provider].webhook.parse(record.payload), record)
    except CANNOT_APPLY as exc:
        db.session.rollback()
        state = _set_aside(record_id, provider, event_id, exc)
    db.session.commit()
    return state


def _lock_record(record_id: int) -> ProcessedWebhook | None:
    return db.session.scalar(
        select(ProcessedWebhook)
        .where(ProcessedWebhook.id == record_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


# Errors caused by the event's data (not by an outage, which leaves the event pending):
# the wallet's hot path talks to psycopg directly, so its errors come unwrapped.
CANNOT_APPLY = (
    WebhookError,
    ValueError,
    LookupError,
    DataError,
    IntegrityError,
    psycopg.DataError,
    psycopg.IntegrityError,
)


def _apply_or_reject(record: ProcessedWebhook) -> str:
    """Apply a locked record in a savepoint; an event that cannot apply is set aside as
    `rejected` with the reason, so it never blocks the events behind it."""
    record_id, provider, event_id = record.id, record.provider, record.event_id
    try:
        with db.session.begin_nested():
            event = PROVIDERS[provider].webhook.parse(record.payload)
            return apply_event(provider, event, record)
    except CANNOT_APPLY as exc:
        return _set_aside(record_id, provider, event_id, exc)


def _set_aside(record_id: int, provider: str, event_id: str, exc: Exception) -> str:
    """Mark an event that cannot apply `rejected`, with the reason (caller's transaction)."""
    cause = getattr(exc, "orig", None) or exc  # the driver's error, not SQLAlchemy's wrapper
    reason = f"could not apply: {type(cause).__name__}: {cause}".splitlines()[0][:500]
    log.error("webhook event %s (%s) set aside: %s", event_id, provider, reason)
    locked = _lock_record(record_id)  # a rollback expired the object
    assert locked is not None
    locked.state, locked.note, locked.processed_at = WebhookState.REJECTED, reason, utcnow()
    metrics.WEBHOOK_EVENTS.labels(provider, "rejected").inc()
    return locked.state


Located = tuple[int, int | None] | None  # (payment id, order id) an event's row locks first


def apply_event(
    provider: str, event: ProviderEvent, record: ProcessedWebhook, located: Any = kinds.LOOK_UP
) -> str:
    """Apply an event in the caller's transaction through the handler of its kind
    (services/movements/kinds.py); set record.state. `located`: what the kind's locator
    answered for it already (a batch sorts by it). The record is stamped after the
    handler, so its row is written once, with the rest of its fields, at the next flush
    (not also by the handler's first statement's autoflush)."""
    handler = kinds.EVENT_HANDLERS.get(event.kind)
    if handler is None:
        record.state, record.note = WebhookState.IGNORED, f"no movement of kind {event.kind!r}"
    else:
        apply, _ = handler
        apply(provider, event, record, located)
    if record.state != WebhookState.PENDING:
        record.processed_at = utcnow()
    return record.state


def locate(provider: str, event: ProviderEvent) -> Located:
    """The (payment id, order id) the event's row locks first, by its kind's locator;
    not locked. Raises ValueError for a reference that cannot be ours."""
    handler = kinds.EVENT_HANDLERS.get(event.kind)
    return handler[1](provider, event) if handler is not None else None


RETRY_BUDGET_S = 40.0  # one run stays well inside the 60 s job timeout


def retry_pending_events(batch: int = 100, budget_s: float = RETRY_BUDGET_S) -> int:
    """Apply pending events: their payment was not found yet, or their job was lost (Redis
    was down when they arrived). Walks every pending event once, a committed batch at a
    time, until the time budget runs out; one that cannot apply is set aside. Returns
    how many were applied (or set aside)."""
    deadline = time.monotonic() + budget_s
    applied, after_id = 0, 0
    grace_s = settings().webhooks.foreign_grace_s
    foreign_before = utcnow() - timedelta(seconds=grace_s)
    while time.monotonic() < deadline:
        record_ids = db.session.scalars(
            select(ProcessedWebhook.id)
            .where(ProcessedWebhook.state == WebhookState.PENDING, ProcessedWebhook.id > after_id)
            .order_by(ProcessedWebhook.id)
            .limit(batch)
            .with_for_update(skip_locked=True)
        ).all()
        if not record_ids:
            break
        for record_id in record_ids:
            record = db.session.get(ProcessedWebhook, record_id)
            assert record is not None
            if _apply_or_reject(record) != WebhookState.PENDING:
                applied += 1
            elif record.received_at < foreign_before:
                record.state, record.processed_at = WebhookState.IGNORED, utcnow()
                record.note = (
                    f"not ours: no payment or refund of ours {grace_s // 3600} h after it came "
                    f"(last: {record.note})"
                )[:500]
                applied += 1
        after_id = record_ids[-1]
        db.session.commit()
    db.session.rollback()
    return applied


def record_duplicate(provider: str) -> None:
    """Count a redelivery for the dashboard (best effort: Redis may be down)."""
    day_counts.count_today(day_counts.DUPLICATE_WEBHOOKS)
