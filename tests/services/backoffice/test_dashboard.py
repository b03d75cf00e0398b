"""What the dashboard shows: counts per watched status with the oldest age, and events."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import Flask

from extensions import db
from models import PaymentStatus, TransitionSource
from models.types import utcnow
from services.backoffice.dashboard import payment_stats, webhook_stats
from services.movements.locks import lock_payment
from services.payments.state import move
from services.platform.retention import transitions_of
from tests.factories import make_customer, make_order, make_payment


def test_payment_stats_count_and_age_the_watched_statuses(app_ctx: Flask) -> None:
    customer = make_customer()
    old = make_payment(make_order(customer))
    old.status, old.created_at = PaymentStatus.UNKNOWN, utcnow() - timedelta(minutes=10)
    make_payment(make_order(customer))  # pending
    make_payment(make_order(customer)).status = PaymentStatus.REQUIRES_ACTION
    db.session.commit()
    stats = payment_stats()
    assert stats["watched"]["requires_action"]["count"] == 1
    assert stats["watched"]["unknown"]["count"] == 1
    assert stats["watched"]["unknown"]["oldest_age_s"] >= 600
    assert stats["watched"]["pending"]["count"] == 1
    assert stats["watched"]["needs_review"] == {
        "count": 0,
        "is_capped": False,
        "oldest_age_s": None,
    }
    assert webhook_stats()["rejected"] == 0


def test_a_payments_story_is_oldest_first(app_ctx: Flask) -> None:
    created = make_payment(make_order(make_customer()))
    db.session.commit()
    locked = lock_payment(created.id)
    assert locked is not None
    move(locked, PaymentStatus.UNKNOWN, source=TransitionSource.CHARGE, reason="timeout")
    move(locked, PaymentStatus.SUCCEEDED, source=TransitionSource.RECONCILE, reason="found")
    db.session.commit()
    assert [t.to_status for t in transitions_of(created.id)] == [
        PaymentStatus.UNKNOWN,
        PaymentStatus.SUCCEEDED,
    ]


def test_the_smtp_breaker_and_the_notifications_queue_are_watched(app_ctx: Flask) -> None:
    from services.backoffice.dashboard import breakers, queues
    from services.platform.provider_clients import breaker_for

    breaker_for("smtp").force("open", actor="test", reason="mail server down")
    states = {row["provider"]: row["state"] for row in breakers()}
    assert states["smtp"] == "forced_open" and "stripe" in states
    assert "notifications" in {row["name"] for row in queues()}


def test_counts_on_the_overview_are_capped(app_ctx: Flask, monkeypatch: Any) -> None:
    """A hot page counts a bounded range of the index, never all of history."""
    from services.backoffice import dashboard

    monkeypatch.setattr(dashboard, "COUNT_CAP", 2)
    customer = make_customer()
    for _ in range(3):
        make_payment(make_order(customer)).status = PaymentStatus.UNKNOWN
    db.session.commit()
    unknown = payment_stats()["watched"]["unknown"]
    assert unknown["count"] == 2 and unknown["is_capped"] is True
