"""The reconciled days, read (the Books page, `flask books reconcile`), and a day's
reconciliation asked of the provider's queue (its balance is read there)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import date

from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from sqlalchemy import case, func, select

from extensions import db, redis_client
from models import (
    Dispute,
    JournalEntry,
    Payment,
    Posting,
    ProviderBalanceTxn,
    ProviderPayout,
    ReconciliationDay,
    ReconciliationItem,
    Refund,
    SourceKind,
)
from services.payouts import reads as payouts
from services.platform import job_paths
from services.platform.queues import enqueue
from services.statements.reconcile import day_bounds


def request(provider: str, day: date) -> str | None:
    """Enqueue the day's reconciliation on the provider's queue; its job id (None when
    Redis could not take it)."""
    job_id = f"books-reconcile-{provider}-{day.isoformat()}"
    queued = enqueue(provider, job_paths.RECONCILE_BOOKS, provider, day.isoformat(), job_id=job_id)
    return job_id if queued else None


def outcome_of(job_id: str, wait_s: float) -> str | None:
    """The requested reconciliation's outcome ("reconciled", "unreconciled",
    "unreadable", "failed"), waiting up to `wait_s` for a worker; None when it has not
    run by then."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            job = Job.fetch(job_id, connection=redis_client.client)
        except NoSuchJobError:
            return "failed"
        status = job.get_status(refresh=True)
        if status == JobStatus.FINISHED:
            return str(job.return_value())
        if status in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
            return "failed"
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.2)


def day_of(provider: str, day: date) -> ReconciliationDay | None:
    return db.session.scalars(
        select(ReconciliationDay).where(
            ReconciliationDay.provider == provider, ReconciliationDay.day == day
        )
    ).first()


def recent_days(limit: int = 60) -> list[ReconciliationDay]:
    return list(
        db.session.scalars(
            select(ReconciliationDay)
            .order_by(ReconciliationDay.day.desc(), ReconciliationDay.provider)
            .limit(limit)
        )
    )


def items_of(day_id: int) -> list[tuple[ReconciliationItem, ProviderBalanceTxn | None]]:
    """A day's items, the provider's record beside each (the ones to look at first)."""
    rows = db.session.execute(
        select(ReconciliationItem, ProviderBalanceTxn)
        .outerjoin(ProviderBalanceTxn, ProviderBalanceTxn.id == ReconciliationItem.provider_txn_id)
        .where(ReconciliationItem.day_id == day_id)
        .order_by(ReconciliationItem.outcome == "matched", ReconciliationItem.id)
    )
    return [(item, txn) for item, txn in rows]


def payouts_of(
    provider: str, items: list[tuple[ReconciliationItem, ProviderBalanceTxn | None]]
) -> list[tuple[ReconciliationItem, ProviderBalanceTxn, ProviderPayout | None]]:
    """The day's payouts, each with what its events said of it (None: no event yet)."""
    paid_out = [(i, t) for i, t in items if t is not None and t.type == "payout"]
    told = payouts.told(provider, [t.source_id for _, t in paid_out])
    return [(i, t, told.get(t.source_id)) for i, t in paid_out]


def fees_of(provider: str, day_id: int) -> dict[str, int]:
    """The provider's fees on the day's transactions, per currency."""
    rows = db.session.execute(
        select(ProviderBalanceTxn.currency, func.sum(ProviderBalanceTxn.fee_minor))
        .join(ReconciliationItem, ReconciliationItem.provider_txn_id == ProviderBalanceTxn.id)
        .where(ReconciliationItem.day_id == day_id, ProviderBalanceTxn.provider == provider)
        .group_by(ProviderBalanceTxn.currency)
    )
    return {currency: int(total) for currency, total in rows}


@dataclass(frozen=True)
class JournalLine:
    """One posting of a day, as an accountant's import reads it."""

    day: date
    account: str
    amount_minor: int
    currency: str
    source: str  # "payment 7 succeeded"
    provider_id: str  # what the provider calls the movement ("" when it has no call)


def journal_lines(day: date) -> list[JournalLine]:
    """Every posting of the entries made on the day (UTC), in order."""
    start, end = day_bounds(day)
    provider_id = case(
        (JournalEntry.source_kind == SourceKind.PAYMENT, Payment.provider_payment_id),
        (JournalEntry.source_kind == SourceKind.REFUND, Refund.provider_refund_id),
        (JournalEntry.source_kind == SourceKind.DISPUTE, Dispute.provider_dispute_id),
        (JournalEntry.source_kind == SourceKind.BALANCE, ProviderBalanceTxn.txn_id),
        else_=None,
    )
    rows = db.session.execute(
        select(
            JournalEntry.source_kind,
            JournalEntry.source_id,
            JournalEntry.step,
            Posting.account,
            Posting.amount_minor,
            Posting.currency,
            provider_id,
        )
        .join(Posting, Posting.entry_id == JournalEntry.id)
        .outerjoin(
            Payment,
            (JournalEntry.source_kind == SourceKind.PAYMENT)
            & (Payment.id == JournalEntry.source_id),
        )
        .outerjoin(
            Refund,
            (JournalEntry.source_kind == SourceKind.REFUND) & (Refund.id == JournalEntry.source_id),
        )
        .outerjoin(
            Dispute,
            (JournalEntry.source_kind == SourceKind.DISPUTE)
            & (Dispute.id == JournalEntry.source_id),
        )
        .outerjoin(
            ProviderBalanceTxn,
            (JournalEntry.source_kind == SourceKind.BALANCE)
            & (ProviderBalanceTxn.id == JournalEntry.source_id),
        )
        .where(JournalEntry.created_at >= start, JournalEntry.created_at < end)
        .order_by(JournalEntry.id, Posting.id)
    )
    return [
        JournalLine(
            day, account, int(amount), currency, f"{kind.value} {source_id} {step}", ref or ""
        )
        for kind, source_id, step, account, amount, currency, ref in rows
    ]
