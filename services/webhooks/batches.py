"""Applying recorded webhook events in batches, so the maintenance workers keep up with
what the web workers ingest.

A recorded event rings the doorbell (services/platform/queues.ring): one job waits,
however many events come. The job takes the events that wait for their first
application, up to BATCH at a time, locked with SKIP LOCKED (another worker's batch
keeps its own), and applies each batch in one transaction, payments in id order (each
one's order, then the payment: the one lock order, in the same sequence in every
batch), until none is left or its BUDGET_S is spent (then it rings again). A full
batch rings too, before it is applied: under a backlog every maintenance worker gets a
job, and SKIP LOCKED gives each its own events.

An event whose payment is already where it says (the usual one: the charge's answer
came first) is marked in two statements for the whole batch (services/webhooks/
unchanged.py); the others, of every kind (a payment's, a refund's, a dispute's), are
applied one by one under their row locks, in the one lock order. Anything unusual (an
event that cannot apply, a deadlock with another transaction) rolls the batch back and
applies its events one at a time, the path that sets a bad event aside (services/
webhooks/events.py).
"""

from __future__ import annotations

import logging
import time
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
    locate,
)
from services.webhooks.unchanged import Parsed, mark_unchanged

log = logging.getLogger(__name__)

BATCH = 50
BUDGET_S = 20.0  # one job stays well inside the 60 s job timeout


def apply_waiting() -> str:
    """The doorbell's job: apply the events waiting, a batch at a time. Commits. Returns
    how it went (for the job's result)."""
    queues.answer(queues.WEBHOOKS_BELL)  # before the claim: later events ring again
    started, batches, applied, alone = time.monotonic(), 0, 0, 0
    while True:
        count, is_alone = apply_batch()
        batches, applied, alone = batches + 1, applied + count, alone + is_alone * count
        if count < BATCH:
            return f"{applied} in {batches} batches ({alone} one at a time)"
        if time.monotonic() - started > BUDGET_S:
            queues.ring_webhooks()  # the rest in a job of its own
            return f"{applied} in {batches} batches ({alone} one at a time); more waiting"


def apply_batch() -> tuple[int, bool]:
    """Apply up to BATCH waiting events in one transaction (or, when one of them needs it,
    one at a time). Commits. Returns how many, and whether one at a time."""
    records = db.session.scalars(
        select(ProcessedWebhook)
        .where(ProcessedWebhook.state == WebhookState.PENDING, ProcessedWebhook.note == RECEIVED)
        .order_by(ProcessedWebhook.id)
        .limit(BATCH)
        .with_for_update(skip_locked=True)
    ).all()
    if not records:
        db.session.rollback()  # applied by another batch, or by the periodic retry
        return 0, False
    if len(records) == BATCH:
        queues.ring_webhooks()  # more may wait: another worker's job helps meanwhile
    ids = [record.id for record in records]
    try:
        _apply_in_order(records)
        db.session.commit()
    except (OperationalError, psycopg.OperationalError, *CANNOT_APPLY) as exc:
        db.session.rollback()
        log.info("webhook batch of %s events applied one at a time (%s)", len(ids), exc)
        for one in ids:
            apply_recorded(one)
        return len(ids), True
    return len(ids), False


def _apply_in_order(records: Sequence[ProcessedWebhook]) -> None:
    """Every kind's events in one lock order: by the payment each locks first (its
    order, then it), then by arrival; an event that locks no row comes first."""
    parsed: list[Parsed] = [
        (record, PROVIDERS[record.provider].webhook.parse(record.payload)) for record in records
    ]
    located: list[tuple[Located, ProcessedWebhook, ProviderEvent]] = []
    for record, event in mark_unchanged(parsed):  # the usual event: two statements in all
        located.append((locate(record.provider, event), record, event))
    for found, record, event in sorted(located, key=_lock_order):
        apply_event(record.provider, event, record, found)


def _lock_order(item: tuple[Located, ProcessedWebhook, Any]) -> tuple[int, int]:
    found, record, _ = item
    return (found[0] if found else 0), record.id
