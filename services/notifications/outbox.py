"""Writing emails: one outbox row per email and cause, in the cause's own transaction
(a receipt commits with the payment's success); the sender is woken after the commit.

INSERT ... ON CONFLICT (kind, subject_id) DO NOTHING: the second success of a payment,
or a job run twice, writes no second row. A row whose job is lost (Redis down at the
commit) is sent by the sweep (services/notifications/emails.py): the row is the outbox.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, cast

from sqlalchemy import Table, bindparam, event, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from extensions import db
from models import Customer, EmailKind, OutboxMessage, OutboxStatus
from models.types import utcnow
from services.platform import job_paths, queues
from settings import settings

log = logging.getLogger(__name__)
SEND_EMAIL_JOB = job_paths.SEND_EMAIL  # a row's own job: its retry, the sweep, a resend
SEND_EMAILS_JOB = job_paths.SEND_EMAILS  # the doorbell's: whatever waits
_PENDING = "outbox.pending"


def email_job_id(outbox_id: int, suffix: str = "") -> str:
    return f"email-{outbox_id}{suffix}"


def queue_email(kind: EmailKind, subject_id: int, *, customer_id: int | None = None) -> None:
    """Record an email to the customer `customer_id` (or, for alerts, the admins), in the
    caller's transaction; it is enqueued once that transaction commits."""
    now = utcnow()
    params = {"kind": kind.value, "subject_id": subject_id, "created_at": now, "updated_at": now}
    if customer_id is not None:
        params["customer_id"] = customer_id  # the address is read in the same statement
    else:
        params["recipient"] = settings().email.admin_alert_email
    statement = _insert_statement(customer_id is not None)
    outbox_id = db.session.execute(statement, params).scalar()
    if outbox_id is not None:
        wake_after_commit(outbox_id)


def wake_after_commit(outbox_id: int) -> None:
    """A row was written in the session's transaction: wake the sender once it commits."""
    db.session.info.setdefault(_PENDING, []).append(outbox_id)


@functools.cache
def _insert_statement(is_to_customer: bool) -> Any:
    table = cast(Table, OutboxMessage.__table__)  # a mapped class's is a Table
    recipient: Any = (
        select(Customer.email).where(Customer.id == bindparam("customer_id")).scalar_subquery()
        if is_to_customer
        else bindparam("recipient")
    )
    return (
        pg_insert(table)
        .values(
            kind=bindparam("kind"),
            subject_id=bindparam("subject_id"),
            recipient=recipient,
            status=OutboxStatus.PENDING.value,
            attempts=0,
            created_at=bindparam("created_at", type_=table.c.created_at.type),
            updated_at=bindparam("updated_at", type_=table.c.updated_at.type),
        )
        .on_conflict_do_nothing(index_elements=["kind", "subject_id"])
        .returning(table.c.id)
    )


def enqueue_send(outbox_id: int, *, delay_s: float | None = None, suffix: str = "") -> bool:
    return queues.enqueue(
        "notifications",
        SEND_EMAIL_JOB,
        outbox_id,
        job_id=email_job_id(outbox_id, suffix),
        delay_s=delay_s,
        queue_name=settings().email.queue,
        is_started_job_dead=bool(suffix == "-sweep"),
    )


def wake_sender() -> bool:
    """Rows were just committed: ring the sender's doorbell (one waiting job sends every
    row that waits; services/platform/queues.ring). False when Redis is down: the
    sweep sends them."""
    return queues.ring(
        queues.named_queue(settings().email.queue), SEND_EMAILS_JOB, queues.EMAILS_BELL
    )


@event.listens_for(Session, "after_commit")
def _enqueue_committed(session: Session) -> None:
    if session.info.pop(_PENDING, []):
        wake_sender()


@event.listens_for(Session, "after_rollback")
def _drop_uncommitted(session: Session) -> None:
    session.info.pop(_PENDING, None)
