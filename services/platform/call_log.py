"""The provider call log: the gateway hands each call's record here after the call; it
is written on a connection of its own, in autocommit, so no transaction is ever open
around a provider call for it, and a failed write never touches the caller's work."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, insert

from extensions import db
from models import SETTLED_STATUSES, Payment, ProviderCall, Refund, RefundStatus
from models.types import utcnow
from resilience.gateway import CallRecord
from settings import settings


def write(record: CallRecord) -> None:
    with db.engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(
            insert(ProviderCall).values(**row_of(record))
        )


def write_all(records: list[CallRecord]) -> None:
    """The calls a caller kept for its own statement, when that statement did not run."""
    for record in records:
        write(record)


def row_of(record: CallRecord) -> dict[str, object]:
    """The call's row, its texts cut to their columns."""
    context = record.context
    return {
        "provider": record.provider,
        "operation": context.operation[:32],
        "subject_kind": context.kind,
        "subject_id": context.subject_id,
        "idempotency_key": (context.idempotency_key or "")[:100] or None,
        "attempt": context.attempt,
        "started_at": record.started_at,
        "duration_ms": record.duration_ms,
        "outcome": record.outcome[:32],
        "http_status": record.http_status,
        "endpoint": (record.endpoint or "")[:200] or None,
        "request_id": (record.request_id or "")[:100] or None,
        "error": record.error,
    }


# The call's row as SQL text, for a lean path that writes it inside its own statement
# (a CTE of the lean charge's settle, services/payments/settling.py; an email marked
# sent, services/notifications/emails.py), with `params`.
_COLUMNS = [column.name for column in ProviderCall.__table__.columns if column.name != "id"]
INSERT_SQL = (
    f"INSERT INTO provider_calls ({', '.join(_COLUMNS)}) "
    f"VALUES ({', '.join(':call_' + name for name in _COLUMNS)})"
)


def params(record: CallRecord) -> dict[str, object]:
    """INSERT_SQL's parameters for the call."""
    return {f"call_{name}": value for name, value in row_of(record).items()}


SETTLED_REFUNDS = (RefundStatus.SUCCEEDED, RefundStatus.FAILED)


def purge(batch: int = 5000) -> int:
    """Delete calls older than CALL_LOG_RETENTION_DAYS, a batch at a time (the job)."""
    cutoff = utcnow() - timedelta(days=settings().housekeeping.call_log_retention_days)
    removed = 0
    while True:
        # Never the calls of a payment or refund still deciding or in review: its evidence.
        payments = db.select(Payment.id).where(Payment.status.not_in(SETTLED_STATUSES))
        refunds = db.select(Refund.id).where(Refund.status.not_in(SETTLED_REFUNDS))
        ids = db.session.scalars(
            db.select(ProviderCall.id)
            .where(
                ProviderCall.started_at < cutoff,
                # (a call about no row has no kind: distinct from each)
                ProviderCall.subject_kind.is_distinct_from("charge")
                | ProviderCall.subject_id.not_in(payments),
                ProviderCall.subject_kind.is_distinct_from("refund")
                | ProviderCall.subject_id.not_in(refunds),
            )
            .limit(batch)
        ).all()
        if not ids:
            break
        db.session.execute(delete(ProviderCall).where(ProviderCall.id.in_(ids)))
        db.session.commit()
        removed += len(ids)
    db.session.rollback()
    return removed
