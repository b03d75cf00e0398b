"""What the admin dashboard shows: read-only queries over the database, Redis and RQ."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from redis.exceptions import RedisError
from rq import Queue, Worker
from rq.registry import FailedJobRegistry, ScheduledJobRegistry, StartedJobRegistry
from sqlalchemy import Select, func, select

from extensions import db, redis_client
from models import (
    Dispute,
    OutboxMessage,
    OutboxStatus,
    Payment,
    PaymentStatus,
    PaymentTransition,
    ProcessedWebhook,
    WebhookState,
)
from models.dispute import AWAITING_EVIDENCE, DISPUTE_CLOSED, DisputeStatus
from models.types import utcnow
from providers.smtp import SMTP_GATEWAY
from services.backoffice import charts
from services.platform import day_counts, metrics
from services.platform.provider_clients import breaker_for, provider_for
from services.platform.queues import every_queue_name
from services.wallet.audit import last_audit
from settings import settings

WATCHED = (
    PaymentStatus.PENDING,
    PaymentStatus.UNKNOWN,
    PaymentStatus.REQUIRES_ACTION,  # customers at their bank (3-D Secure)
    PaymentStatus.NEEDS_REVIEW,
)


def guarded_names() -> list[str]:
    """Every breaker: the payment providers' and the SMTP server's."""
    return [*settings().payments.providers, SMTP_GATEWAY]


def breakers() -> list[dict[str, Any]]:
    rows = []
    for provider in guarded_names():
        try:
            rows.append(breaker_for(provider).snapshot())
        except RedisError as exc:
            rows.append({"provider": provider, "state": "unreachable", "error": str(exc)})
    return rows


def live_state() -> metrics.LiveState:
    """What /metrics reports besides the processes' counters (the alert rules' inputs)."""
    watched = payment_stats()["watched"]
    return metrics.LiveState(
        # The live statuses only, capped: counting succeeded and failed would read all of
        # history at every scrape (their totals are the process counters).
        payments={status: row["count"] for status, row in watched.items()},
        breakers=[b for b in breakers() if "error" not in b],
        oldest_age_s={status: row["oldest_age_s"] for status, row in watched.items()},
        queue_depths={q["name"]: q["depth"] for q in queues() if "depth" in q},
        outbox=outbox_counts(),
        disputes=dispute_counts(),
        dispute_due_s=dispute_due_s(),
    )


def dispute_counts() -> dict[str, int]:
    """Open disputes by status, each counted up to COUNT_CAP (closed ones are history)."""
    return {
        status.value: capped_count(select(Dispute.id).where(Dispute.status == status))
        for status in DisputeStatus
        if status.is_open
    }


def dispute_due_s() -> float | None:
    """Seconds until the soonest evidence deadline of a dispute still waiting for our
    answer (negative once past), or None when none waits."""
    due = db.session.scalar(
        select(func.min(Dispute.evidence_due_by)).where(Dispute.status.in_(AWAITING_EVIDENCE))
    )
    return None if due is None else (due - utcnow()).total_seconds()


def outbox_counts() -> dict[str, int]:
    """Emails not sent (pending, failed), each counted up to COUNT_CAP; sent ones are
    history (their total is emails_total)."""
    return {
        status.value: capped_count(select(OutboxMessage.id).where(OutboxMessage.status == status))
        for status in (OutboxStatus.PENDING, OutboxStatus.FAILED)
    }


def capped_count(query: Select[Any]) -> int:
    """How many rows `query` finds, counting no further than COUNT_CAP + 1: an index range
    read, never all of history."""
    capped = query.limit(COUNT_CAP + 1).subquery()
    return db.session.scalar(select(func.count()).select_from(capped)) or 0


def queues() -> list[dict[str, Any]]:
    rows = []
    for name in every_queue_name():
        try:
            queue = Queue(name, connection=redis_client.client)
            rows.append(
                {
                    "name": name,
                    "depth": queue.count,
                    "running": StartedJobRegistry(queue=queue).count,
                    "failed": FailedJobRegistry(queue=queue).count,
                    "scheduled": ScheduledJobRegistry(queue=queue).count,
                    "workers": len(Worker.all(queue=queue)),
                }
            )
        except RedisError as exc:
            rows.append({"name": name, "error": str(exc)})
    return rows


COUNT_CAP = 10_000  # a hot page counts this far: "10,000+" says enough, in bounded time


def payment_stats(now: datetime | None = None) -> dict[str, Any]:
    """Counts (capped) and oldest age per watched status, lookup lag, and the last hour's
    results: every query reads an index range, never all of history."""
    now = now or utcnow()
    watched = {}
    for status in WATCHED:
        count = capped_count(select(Payment.id).where(Payment.status == status))
        oldest = db.session.scalar(
            select(func.min(Payment.created_at)).where(Payment.status == status)
        )
        watched[status.value] = {
            "count": min(count, COUNT_CAP),
            "is_capped": count > COUNT_CAP,
            "oldest_age_s": _age(now, oldest) if oldest else None,
        }
    oldest_due = db.session.scalar(
        select(func.min(Payment.next_reconcile_at)).where(
            Payment.status == PaymentStatus.UNKNOWN, Payment.next_reconcile_at <= now
        )
    )
    hour_ago = now - timedelta(hours=1)
    last_hour = dict(
        db.session.execute(
            select(PaymentTransition.to_status, func.count())
            .where(
                PaymentTransition.created_at >= hour_ago,
                PaymentTransition.to_status.in_([PaymentStatus.SUCCEEDED, PaymentStatus.FAILED]),
            )
            .group_by(PaymentTransition.to_status)
        ).all()
    )
    return {
        "watched": watched,
        "reconcile_lag_s": _age(now, oldest_due) if oldest_due else 0,
        "succeeded_last_hour": last_hour.get(PaymentStatus.SUCCEEDED, 0),
        "failed_last_hour": last_hour.get(PaymentStatus.FAILED, 0),
    }


def webhook_stats(now: datetime | None = None) -> dict[str, Any]:
    now = now or utcnow()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    received = (
        db.session.scalar(
            select(func.count())
            .select_from(ProcessedWebhook)
            .where(ProcessedWebhook.received_at >= midnight)
        )
        or 0
    )
    by_state = dict(
        db.session.execute(
            select(ProcessedWebhook.state, func.count())
            .where(ProcessedWebhook.state.in_((WebhookState.PENDING, WebhookState.REJECTED)))
            .group_by(ProcessedWebhook.state)
        ).all()
    )
    counts = day_counts.today_counts(day_counts.DUPLICATE_WEBHOOKS, day_counts.REPORT_MISMATCHES)
    duplicates, mismatches = counts if counts is not None else (None, None)
    return {
        "received_today": received,
        "duplicates_today": duplicates,
        "pending_unmatched": by_state.get(WebhookState.PENDING, 0),
        "rejected": by_state.get(WebhookState.REJECTED, 0),
        "report_mismatches_today": mismatches,
    }


def sample_health() -> int:
    """The periodic job: one sample of breakers, queues and the oldest unknown payment for
    the overview's charts (services/backoffice/charts.py)."""
    unknown = payment_stats()["watched"]["unknown"]["oldest_age_s"]
    charts.record_sample(
        {
            "breakers": {b["provider"]: b["state"] for b in breakers() if "error" not in b},
            "queues": {q["name"]: q["depth"] for q in queues() if "depth" in q},
            "oldest_unknown_s": unknown,
        }
    )
    db.session.rollback()
    return 1


def overview() -> dict[str, Any]:
    return {
        "charts": charts.overview_charts(),
        "breakers": breakers(),
        "queues": queues(),
        "payments": payment_stats(),
        "webhooks": webhook_stats(),
        "wallet_audit": last_audit(),
        "disputes": open_disputes(),
        "now": utcnow(),
    }


def open_disputes(limit: int = 50) -> list[Dispute]:
    """Disputes not closed yet, the soonest evidence deadline first (none last)."""
    return list(
        db.session.scalars(
            select(Dispute)
            .where(Dispute.status.notin_(DISPUTE_CLOSED))
            .order_by(Dispute.evidence_due_by.asc().nulls_last(), Dispute.id)
            .limit(limit)
        )
    )


def unknown_payments(limit: int = 200) -> list[dict[str, Any]]:
    """Unknown and needs-review payments, oldest first, with what an operator needs."""
    now = utcnow()
    payments = db.session.scalars(
        select(Payment)
        .where(Payment.status.in_([PaymentStatus.UNKNOWN, PaymentStatus.NEEDS_REVIEW]))
        .order_by(Payment.created_at)
        .limit(limit)
    ).all()
    rows = []
    for payment in payments:
        lifetime = provider_for(payment.provider).capabilities.key_lifetime_s
        key_left = None
        if lifetime and payment.first_sent_at:
            key_left = (payment.first_sent_at + timedelta(seconds=lifetime) - now).total_seconds()
        rows.append(
            {"payment": payment, "age_s": _age(now, payment.created_at), "key_left_s": key_left}
        )
    return rows


def _age(now: datetime, then: datetime) -> float:
    return max(0.0, (now - then).total_seconds())
