"""Periodic recovery: payments whose job was lost are enqueued again; due lookups are run.

Enqueues use deterministic job ids, so a sweep never doubles work already queued.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from flask import current_app
from sqlalchemy import and_, or_, select

from extensions import db
from models import Payment, PaymentStatus
from models.types import utcnow
from services.platform import queues

SWEEP_BATCH = 500  # per run; the next run takes the rest


def sweep_pending(now: datetime | None = None) -> int:
    """Enqueue pending payments nobody is working on (worker killed, Redis lost, enqueue failed)."""
    now = now or utcnow()
    stale = now - timedelta(seconds=current_app.config["PENDING_SWEEP_GRACE_S"])
    rows = db.session.execute(
        select(Payment.id, Payment.provider, Payment.lease_expires_at)
        .where(
            Payment.status == PaymentStatus.PENDING,
            or_(Payment.lease_expires_at.is_(None), Payment.lease_expires_at < now),
            or_(
                and_(Payment.next_attempt_at.is_(None), Payment.updated_at < stale),
                Payment.next_attempt_at < stale,
            ),
        )
        .order_by(Payment.id)
        .limit(SWEEP_BATCH)
    ).all()
    db.session.rollback()
    for payment_id, provider, lease_expires_at in rows:
        queues.enqueue(
            provider,
            queues.CHARGE_JOB,
            payment_id,
            job_id=queues.charge_job_id(payment_id),
            is_started_job_dead=True,
            lease_lapsed=lease_expires_at is not None,  # (the query: it expired)
        )
    return len(rows)


def sweep_unknown(now: datetime | None = None) -> int:
    """Enqueue the lookups of unknown payments that are due (or whose job was lost)."""
    now = now or utcnow()
    rows = db.session.execute(
        select(Payment.id, Payment.provider, Payment.reconcile_attempts, Payment.lease_expires_at)
        .where(
            Payment.status == PaymentStatus.UNKNOWN,
            or_(Payment.lease_expires_at.is_(None), Payment.lease_expires_at < now),
            or_(Payment.next_reconcile_at.is_(None), Payment.next_reconcile_at <= now),
        )
        .order_by(Payment.next_reconcile_at)
        .limit(SWEEP_BATCH)
    ).all()
    db.session.rollback()
    for payment_id, provider, attempts, lease_expires_at in rows:
        queues.enqueue(
            provider,
            queues.RECONCILE_JOB,
            payment_id,
            job_id=queues.reconcile_job_id(payment_id, attempts),
            is_started_job_dead=True,
            lease_lapsed=lease_expires_at is not None,
        )
    return len(rows)
