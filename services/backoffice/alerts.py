"""Alerts to the on-call admins (ADMIN_ALERT_EMAIL): a breaker that opens or is forced
open, a provider that refuses our key or our request (at once, from the provider worker
that saw it), unknown payments past ALERT_UNKNOWN_COUNT or
ALERT_UNKNOWN_AGE_S, emails that failed for good. Each condition is one `alerts` row,
UNIQUE by what it is about, and one email on the notifications bulkhead (the outbox), so
a condition seen at every check sends one email; a new episode (the breaker opens
again, the next hour of a backlog) sends another. Disputes have their own alert
(services/disputes/). Deploy's Prometheus rules watch the same conditions."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from extensions import db
from models import Alert, AlertKind, EmailKind, OutboxMessage, OutboxStatus
from models.types import utcnow
from services.backoffice import dashboard
from services.notifications.outbox import queue_email
from settings import settings

OPEN_STATES = ("open", "half_open")


def raise_alert(kind: AlertKind, dedupe_key: str, detail: str) -> bool:
    """Record the alert and its email in the caller's transaction, unless this very
    condition was alerted already; True when it is new."""
    alert_id = db.session.execute(
        pg_insert(Alert)
        .values(kind=kind, dedupe_key=dedupe_key[:200], detail=detail[:500], created_at=utcnow())
        .on_conflict_do_nothing(index_elements=["dedupe_key"])
        .returning(Alert.id)
    ).scalar()
    if alert_id is None:
        return False
    queue_email(EmailKind.OPS_ALERT, alert_id)
    return True


def raise_now(kind: str, dedupe_key: str, detail: str) -> bool:
    """An alert a provider worker handed on (resilience/gateway.py: our key refused, our
    request refused as invalid), in its own transaction; True when it is new."""
    raised = raise_alert(AlertKind(kind), dedupe_key, detail)
    db.session.commit()
    return raised


def forced_key(snapshot: dict[str, Any]) -> str:
    """One forcing of a breaker: its latest audit line (who, why, when) names it."""
    latest = (snapshot.get("audit") or [""])[0]
    return (
        f"breaker:{snapshot['provider']}:forced:{hashlib.sha256(latest.encode()).hexdigest()[:16]}"
    )


def breaker_alerts(snapshot: dict[str, Any]) -> int:
    """The alerts one breaker's state calls for (caller commits)."""
    provider, state, raised = snapshot["provider"], snapshot["state"], 0
    if state in OPEN_STATES:
        # One per outage, from its first opening to the close: a probe that fails and
        # opens it again is the same outage (its start names it).
        since = snapshot.get("outage_since_ms") or snapshot["transitions"]
        raised += raise_alert(
            AlertKind.BREAKER_OPEN,
            f"breaker:{provider}:outage:{since}",
            f"the {provider} breaker opened ({snapshot.get('open_reason') or 'failures'}); "
            f"the last failure: {snapshot.get('last_failure') or 'not recorded'}. Calls to "
            f"{provider} wait until it closes (payments queue, none is charged twice).",
        )
    elif state == "forced_open":
        latest = (snapshot.get("audit") or ["(no audit line)"])[0]
        raised += raise_alert(
            AlertKind.BREAKER_FORCED,
            forced_key(snapshot),
            f"the {provider} breaker was forced open: {latest}",
        )
    auth = snapshot.get("auth_failed")
    if auth:
        raised += raise_alert(
            AlertKind.PROVIDER_KEY,
            # One per outage: the same key as the gateway's at the first refusal.
            f"key:{provider}:{auth['at_ms']}",
            f"{provider} answered {auth['status']} to our key: its calls cannot work until "
            "the key is fixed",
        )
    return raised


def check() -> int:
    """The periodic check (with the health sample): every condition, alerted once.
    Commits; returns how many alerts are new."""
    config, now = settings().alerts, utcnow()
    raised = sum(breaker_alerts(b) for b in dashboard.breakers() if "error" not in b)
    unknown = dashboard.payment_stats(now)["watched"]["unknown"]
    age_s = unknown["oldest_age_s"] or 0
    if unknown["count"] >= config.unknown_count or age_s >= config.unknown_age_s:
        raised += raise_alert(
            AlertKind.UNKNOWN_PAYMENTS,
            f"unknown:{now:%Y-%m-%d %H}",  # at most one an hour while it lasts
            f"{unknown['count']} payments are unknown, the oldest for {age_s / 60:.0f} min: "
            "is a provider down, or its worker not running?",
        )
    hour_ago = now - timedelta(hours=1)
    failed = db.session.scalar(
        select(func.count())
        .select_from(OutboxMessage)
        .where(OutboxMessage.status == OutboxStatus.FAILED, OutboxMessage.updated_at >= hour_ago)
    )
    if failed:
        raised += raise_alert(
            AlertKind.EMAILS_FAILING,
            f"emails:{now:%Y-%m-%d %H}",
            f"{failed} emails failed for good in the last hour (the dashboard's Outbox says why)",
        )
    db.session.commit()
    return raised
