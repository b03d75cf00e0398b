"""The reconciled days, read (the Books page, `flask books reconcile`), and a day's
reconciliation asked of the provider's queue (its balance is read there)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import date

from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from sqlalchemy import func, select

from extensions import db, redis_client
from models import (
    Account,
    ItemOutcome,
    JournalEntry,
    PayoutContent,
    Posting,
    ProviderBalanceTxn,
    ProviderPayout,
    ReconciliationDay,
    ReconciliationItem,
    SourceKind,
)
from services.payouts import reads as payouts
from services.platform import job_paths
from services.platform.queues import enqueue


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
    """The fees the books hold of the day's transactions, per currency: of the items that
    agree (a fee is booked only then), each transaction once, with its corrections."""
    booked = (
        select(ReconciliationItem.provider_txn_id)
        .where(
            ReconciliationItem.day_id == day_id,
            ReconciliationItem.outcome.in_([ItemOutcome.MATCHED, ItemOutcome.BOOKED]),
        )
        .distinct()
        .scalar_subquery()
    )
    rows = db.session.execute(
        select(Posting.currency, func.sum(Posting.amount_minor))
        .join(JournalEntry, JournalEntry.id == Posting.entry_id)
        .where(
            JournalEntry.source_kind == SourceKind.BALANCE,
            JournalEntry.source_id.in_(booked),
            Posting.account == Account.fees(provider),
        )
        .group_by(Posting.currency)
    )
    return {currency: int(total) for currency, total in rows}


@dataclass(frozen=True)
class PayoutReport:
    """A payout as the provider's balance has it, what it paid out, what its events said,
    whether the books hold it."""

    payout: ProviderBalanceTxn
    inside: list[ProviderBalanceTxn]
    told: ProviderPayout | None
    booked: bool


def payout_report(limit: int = 50) -> list[PayoutReport]:
    """The newest payouts read from the providers' balances, each with the transactions
    it paid out (as Stripe's payout reconciliation report lists them)."""
    found = list(
        db.session.scalars(
            select(ProviderBalanceTxn)
            .where(ProviderBalanceTxn.type == "payout")
            .order_by(ProviderBalanceTxn.created_at.desc(), ProviderBalanceTxn.id.desc())
            .limit(limit)
        )
    )
    ids = [p.id for p in found]
    inside: dict[int, list[ProviderBalanceTxn]] = {i: [] for i in ids}
    for payout_id, txn in db.session.execute(
        select(PayoutContent.payout_txn_id, ProviderBalanceTxn)
        .join(ProviderBalanceTxn, ProviderBalanceTxn.id == PayoutContent.txn_id)
        .where(PayoutContent.payout_txn_id.in_(ids))
        .order_by(ProviderBalanceTxn.created_at, ProviderBalanceTxn.id)
    ):
        inside[payout_id].append(txn)
    booked = set(
        db.session.scalars(
            select(JournalEntry.source_id).where(
                JournalEntry.source_kind == SourceKind.BALANCE,
                JournalEntry.step == "payout",
                JournalEntry.source_id.in_(ids),
            )
        )
    )
    told: dict[tuple[str, str], ProviderPayout] = {}
    for provider in {p.provider for p in found}:
        said = payouts.told(provider, [p.source_id for p in found if p.provider == provider])
        told.update(((provider, source), event) for source, event in said.items())
    return [
        PayoutReport(p, inside[p.id], told.get((p.provider, p.source_id)), p.id in booked)
        for p in found
    ]
