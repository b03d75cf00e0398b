"""The one janitor of every movement kind we send: rows whose job was lost (a worker
killed, Redis lost, an enqueue that failed) are enqueued again, and due lookups run.
Enqueues use the kind's deterministic job ids, so a sweep never doubles work already
queued; a row under a live lease is someone's and is left alone."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import and_, or_, select

from extensions import db
from models.types import utcnow
from services.movements import lifecycle
from services.movements.kinds import KINDS, Kind
from services.platform import queues
from settings import settings


def sweep(now: datetime | None = None) -> int:
    """The janitor's job: every registered kind's lost sends and due lookups enqueued
    again. Returns how many."""
    now = now or utcnow()
    return sum(sweep_kind(kind, now) for kind in KINDS.values())


def sweep_kind(kind: Kind, now: datetime | None = None) -> int:
    """One kind's lost sends and due lookups, enqueued again."""
    return sweep_sends(kind, now) + sweep_lookups(kind, now)


def sweep_sends(kind: Kind, now: datetime | None = None) -> int:
    """Enqueue the sends of rows still pending that nobody works on: untouched for
    PENDING_SWEEP_GRACE_S, or deferred and overdue by as much."""
    now, model = now or utcnow(), kind.model
    stale = now - timedelta(seconds=settings().payments.pending_sweep_grace_s)
    rows = db.session.execute(
        select(model.id, model.provider, model.lease_expires_at)
        .where(
            model.status == kind.pending,
            or_(model.lease_expires_at.is_(None), model.lease_expires_at < now),
            or_(
                and_(model.next_attempt_at.is_(None), model.updated_at < stale),
                model.next_attempt_at < stale,
            ),
        )
        .order_by(model.id)
        .limit(queues.SWEEP_BATCH)
    ).all()
    db.session.rollback()
    for row_id, provider, lease_expires_at in rows:
        lifecycle.enqueue_send(
            kind,
            provider,
            row_id,
            is_started_job_dead=True,
            lease_lapsed=lease_expires_at is not None,  # (the query: it expired)
        )
    return len(rows)


def sweep_lookups(kind: Kind, now: datetime | None = None) -> int:
    """Enqueue the lookups of rows in the kind's looked-up states that are due (or whose
    job was lost), the most overdue first."""
    now, model = now or utcnow(), kind.model
    rows = db.session.execute(
        select(model.id, model.provider, model.reconcile_attempts, model.lease_expires_at)
        .where(
            model.status.in_(kind.looked_up),
            or_(model.lease_expires_at.is_(None), model.lease_expires_at < now),
            or_(model.next_reconcile_at.is_(None), model.next_reconcile_at <= now),
        )
        .order_by(model.next_reconcile_at)
        .limit(queues.SWEEP_BATCH)
    ).all()
    db.session.rollback()
    for row_id, provider, attempts, lease_expires_at in rows:
        lifecycle.enqueue_lookup(
            kind,
            provider,
            row_id,
            job_id=kind.lookup_job_id(row_id, attempts),
            is_started_job_dead=True,
            lease_lapsed=lease_expires_at is not None,
        )
    return len(rows)
