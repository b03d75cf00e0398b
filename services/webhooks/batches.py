"""Applying recorded webhook events in batches, so the maintenance workers keep up with
what the web workers ingest.

Every recorded event still gets its own apply job (the wake-up is never lost). The job
takes its event and the events recorded after it that wait for their first application,
up to BATCH, locked with SKIP LOCKED (another worker's batch keeps its own), and applies
them in one transaction, payments in id order (each one's order, then the payment: the
one lock order, in the same sequence in every batch). Once committed, the jobs of the
other events it applied are taken off the queue unstarted, so a worker does not spend a
job on each of them.

Anything unusual (a refund event, an event that cannot apply, a deadlock with another
transaction) rolls the batch back and applies its events one at a time, the path that
sets a bad event aside (services/webhooks/events.py).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import psycopg
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from extensions import db
from models import ProcessedWebhook, WebhookState
from providers.events import ProviderEvent
from providers.registry import PROVIDERS
from services.platform import queues
from services.webhooks.events import (
    CANNOT_APPLY,
    RECEIVED,
    Located,
    apply_event,
    apply_recorded,
    locate_payment,
)

log = logging.getLogger(__name__)

BATCH = 50


class _OneAtATime(Exception):
    """This batch needs the careful path."""


def apply_batch(record_id: int) -> str:
    """The apply job of event `record_id`: apply it and up to BATCH - 1 events recorded
    after it that are still waiting. Commits. Returns how it went (for the job's result)."""
    records = db.session.scalars(
        select(ProcessedWebhook)
        .where(
            ProcessedWebhook.state == WebhookState.PENDING,
            ProcessedWebhook.note == RECEIVED,
            ProcessedWebhook.id >= record_id,
        )
        .order_by(ProcessedWebhook.id)
        .limit(BATCH)
        .with_for_update(skip_locked=True)
    ).all()
    if not records:
        db.session.rollback()  # applied by another batch, or by the periodic retry
        return "done"
    ids = [record.id for record in records]
    try:
        _apply_in_order(records)
        db.session.commit()
    except (_OneAtATime, OperationalError, psycopg.OperationalError, *CANNOT_APPLY) as exc:
        db.session.rollback()
        log.info("webhook batch of %s events applied one at a time (%s)", len(ids), exc)
        for one in ids:
            apply_recorded(one)
        return f"{len(ids)} one at a time"
    queues.drop_queued_webhook_jobs([one for one in ids if one != record_id])
    return f"{len(ids)} in a batch"


def _apply_in_order(records: Sequence[ProcessedWebhook]) -> None:
    located: list[tuple[Located, ProcessedWebhook, ProviderEvent]] = []
    for record in records:
        event = PROVIDERS[record.provider].webhook.parse(record.payload)
        if event.is_refund:
            raise _OneAtATime(f"refund event {record.event_id}")
        found = locate_payment(record.provider, event) if event.outcome is not None else None
        located.append((found, record, event))
    for found, record, event in sorted(located, key=_lock_order):
        apply_event(record.provider, event, record, found)


def _lock_order(item: tuple[Located, ProcessedWebhook, Any]) -> tuple[int, int]:
    found, record, _ = item
    return (found[0] if found else 0), record.id
