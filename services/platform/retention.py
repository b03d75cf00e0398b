"""Retention: the hot tables hold the present and the recent past, whatever the age of
the shop. A job (hourly) moves or deletes what has been settled for RETENTION_DAYS:

- the transitions of payments final (succeeded or failed) for that long move to
  `payment_transitions_archive`, where the payment's story still finds them;
- webhook events applied or ignored that long ago are deleted, except those of a
  payment not yet settled (in review, a person may need them). The payment keeps the
  effect, the ledger the money. RETENTION_DAYS is at least 35, past every provider's
  redelivery and the 30 days the backfill can reach;
- emails sent that long ago are deleted;
- provider calls follow CALL_LOG_RETENTION_DAYS (services/platform/call_log.py).

Payments, refunds and ledger entries are never touched: they are the money facts the
wallet audit checks. Each step reads its table's time index (what is old enough, not
all of history) and commits a batch at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, Delete, Select, Table, delete, insert, select

from extensions import db
from models import (
    SETTLED_STATUSES,
    ArchivedTransition,
    OutboxMessage,
    OutboxStatus,
    Payment,
    PaymentTransition,
    ProcessedWebhook,
    WebhookState,
)
from models.types import utcnow
from services.platform import call_log
from settings import settings

BATCH = 1000
SETTLED = tuple(SETTLED_STATUSES)
_COLUMNS = ("id", "payment_id", "from_status", "to_status", "source", "reason", "actor",
            "created_at")  # fmt: skip


def run(now: datetime | None = None) -> dict[str, int]:
    """The job: every step, until nothing is old enough. Returns how many rows each moved."""
    cutoff = (now or utcnow()) - timedelta(days=settings().housekeeping.retention_days)
    return {
        "transitions_archived": _repeat(lambda: _archive_transitions(cutoff)),
        "webhooks_deleted": _repeat(lambda: _delete_webhooks(cutoff)),
        "emails_deleted": _repeat(lambda: _delete_emails(cutoff)),
        "provider_calls_deleted": call_log.purge(),
    }


def transitions_of(payment_id: int) -> Sequence[PaymentTransition]:
    """A payment's whole story, oldest first: what was archived (as transitions outside
    any session; a payment acted on again after its archiving has both) and the rest."""
    archived = db.session.execute(
        select(*(ArchivedTransition.__table__.c[name] for name in _COLUMNS))
        .where(ArchivedTransition.payment_id == payment_id)
        .order_by(ArchivedTransition.id)
    ).all()
    hot = db.session.scalars(
        select(PaymentTransition)
        .where(PaymentTransition.payment_id == payment_id)
        .order_by(PaymentTransition.id)
    ).all()
    return [*(PaymentTransition(**row._asdict()) for row in archived), *hot]


def _repeat(step: Callable[[], int]) -> int:
    total = 0
    while True:
        moved = step()
        db.session.commit()
        total += moved
        if moved == 0:
            return total


def _archive_transitions(cutoff: datetime) -> int:
    """All the transitions of up to BATCH payments settled before `cutoff`, in one go
    (a payment's story is never split between the tables)."""
    old = (
        select(PaymentTransition.payment_id)
        .where(PaymentTransition.created_at < cutoff)
        .order_by(PaymentTransition.created_at)
        .limit(BATCH)
    )
    payment_ids = db.session.scalars(
        select(Payment.id).where(
            Payment.id.in_(old.scalar_subquery()),
            Payment.status.in_(SETTLED),
            Payment.updated_at < cutoff,
        )
    ).all()
    if not payment_ids:
        return 0
    hot = cast(Table, PaymentTransition.__table__)  # a mapped class's is a Table
    moving = select(*(hot.c[name] for name in _COLUMNS)).where(hot.c.payment_id.in_(payment_ids))
    db.session.execute(insert(ArchivedTransition).from_select(_COLUMNS, moving))
    return _deleted(delete(hot).where(hot.c.payment_id.in_(payment_ids)))


def unsettled_payments() -> Select[Any]:
    """The payments whose every record is kept: not final, or in review (a person may
    need the provider's own words, its events and the calls, to decide)."""
    return select(Payment.id).where(Payment.status.not_in(SETTLED))


def _delete_webhooks(cutoff: datetime) -> int:
    ids = select(ProcessedWebhook.id).where(
        ProcessedWebhook.received_at < cutoff,
        ProcessedWebhook.state.in_((WebhookState.APPLIED, WebhookState.IGNORED)),
        ProcessedWebhook.payment_id.is_(None)
        | ProcessedWebhook.payment_id.not_in(unsettled_payments()),
    )
    return _delete_ids(ProcessedWebhook, ids)


def _delete_emails(cutoff: datetime) -> int:
    ids = select(OutboxMessage.id).where(
        OutboxMessage.created_at < cutoff, OutboxMessage.status == OutboxStatus.SENT
    )
    return _delete_ids(OutboxMessage, ids)


def _delete_ids(model: Any, ids: Select[Any]) -> int:
    found = db.session.scalars(ids.limit(BATCH)).all()
    if not found:
        return 0
    table = model.__table__
    return _deleted(delete(table).where(table.c.id.in_(found)))


def _deleted(statement: Delete) -> int:
    result = cast(CursorResult[Any], db.session.execute(statement))
    return result.rowcount
