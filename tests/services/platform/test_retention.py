"""Retention: what was settled long ago leaves the hot tables; the money facts stay, the
wallet audit still passes, and a payment's story is still whole."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select, update

from config import ConfigError, settings_from_env
from extensions import db
from models import (
    ArchivedTransition,
    LedgerEntry,
    OutboxMessage,
    OutboxStatus,
    Payment,
    PaymentStatus,
    PaymentTransition,
    ProcessedWebhook,
    TransitionSource,
)
from models.types import utcnow
from services.payments.reads import payment_json
from services.payments.state import move
from services.platform import retention
from services.wallet.audit import audit_wallets
from tests.helpers import (
    committed_payment,
    committed_topup,
    rows,
    run_maintenance_jobs,
    run_notification_jobs,
    signed_post,
    stripe_event,
)

OLD = timedelta(days=100)


def _succeed(app: Flask, client: FlaskClient, payment_id: int, amount: int) -> None:
    event = stripe_event(payment_id, intent_id=f"pi_{payment_id}", amount=amount)
    assert signed_post(client, event).status_code == 200
    run_maintenance_jobs(app)
    run_notification_jobs(app)  # the receipt is sent


def _age(app: Flask, payment_ids: list[int]) -> None:
    """Move everything about these payments 100 days back."""
    then = utcnow() - OLD
    with app.app_context():
        db.session.execute(
            update(Payment).where(Payment.id.in_(payment_ids)).values(updated_at=then)
        )
        for model, column, key in (
            (PaymentTransition, PaymentTransition.created_at, PaymentTransition.payment_id),
            (ProcessedWebhook, ProcessedWebhook.received_at, ProcessedWebhook.payment_id),
            (OutboxMessage, OutboxMessage.created_at, OutboxMessage.subject_id),
        ):
            db.session.execute(update(model).where(key.in_(payment_ids)).values({column: then}))
        db.session.commit()


def _count(app: Flask, model: Any, *where: Any) -> int:
    with app.app_context():
        return int(db.session.scalar(select(func.count()).select_from(model).where(*where)) or 0)


def test_old_settled_history_leaves_the_hot_tables_and_the_audit_still_passes(
    app: Flask, client: FlaskClient
) -> None:
    old_topup, old_order = committed_topup(app), committed_payment(app)
    recent_topup = committed_topup(app)
    for payment_id, amount in ((old_topup, 700), (old_order, 1000), (recent_topup, 700)):
        _succeed(app, client, payment_id, amount)
    in_review = committed_payment(app, status=PaymentStatus.NEEDS_REVIEW)
    _age(app, [old_topup, old_order, in_review])
    assert _count(app, OutboxMessage, OutboxMessage.status == OutboxStatus.SENT) == 3
    with app.app_context():
        assert audit_wallets().mismatches == []
    ledger_before = rows(app, LedgerEntry)
    old_stories = {p: _count(app, PaymentTransition, PaymentTransition.payment_id == p)
                   for p in (old_topup, old_order)}  # fmt: skip
    with app.app_context():
        told = [(t.id, t.to_status, t.reason) for t in retention.transitions_of(old_order)]

    with app.app_context():
        moved = retention.run()

    assert moved["transitions_archived"] == sum(old_stories.values()) > 0
    assert moved["webhooks_deleted"] == 2 and moved["emails_deleted"] == 2
    for payment_id, story in old_stories.items():
        assert _count(app, PaymentTransition, PaymentTransition.payment_id == payment_id) == 0
        assert _count(app, ArchivedTransition, ArchivedTransition.payment_id == payment_id) == story
    # The present and what a person must still decide stay where they were.
    assert _count(app, PaymentTransition, PaymentTransition.payment_id == recent_topup) == 1
    assert _count(app, ProcessedWebhook, ProcessedWebhook.payment_id == recent_topup) == 1
    assert _count(app, OutboxMessage, OutboxMessage.subject_id == recent_topup) == 1
    # The money facts are untouched and still agree.
    assert rows(app, LedgerEntry) == ledger_before
    with app.app_context():
        assert audit_wallets().mismatches == []
        archived = retention.transitions_of(old_order)
        assert [(t.id, t.to_status, t.reason) for t in archived] == told
        assert retention.run() == dict.fromkeys(moved, 0)  # nothing left to move


def test_a_payment_page_shows_an_archived_story(app: Flask, client: FlaskClient) -> None:
    payment_id = committed_payment(app)
    _succeed(app, client, payment_id, 1000)
    _age(app, [payment_id])
    with app.app_context():
        before = payment_json(db.session.get_one(Payment, payment_id))["transitions"]
        assert retention.run()["transitions_archived"] == 1
        after = payment_json(db.session.get_one(Payment, payment_id))["transitions"]
    assert after == before and [t["to"] for t in after] == ["succeeded"]


def test_a_story_acted_on_after_its_archiving_is_still_whole(
    app: Flask, client: FlaskClient
) -> None:
    payment_id = committed_payment(app)
    _succeed(app, client, payment_id, 1000)
    _age(app, [payment_id])
    with app.app_context():
        retention.run()
        payment = db.session.get_one(Payment, payment_id)
        move(payment, PaymentStatus.NEEDS_REVIEW, source=TransitionSource.ADMIN, reason="x")
        db.session.commit()
        story = [t.to_status for t in retention.transitions_of(payment_id)]
    assert story == [PaymentStatus.SUCCEEDED, PaymentStatus.NEEDS_REVIEW]


def test_the_webhooks_of_a_payment_in_review_stay(app: Flask, client: FlaskClient) -> None:
    in_review, settled = committed_payment(app), committed_payment(app)
    for payment_id in (in_review, settled):
        _succeed(app, client, payment_id, 1000)
    with app.app_context():
        found = db.session.get(Payment, in_review)
        assert found is not None
        move(found, PaymentStatus.NEEDS_REVIEW, source=TransitionSource.ADMIN, reason="checking")
        db.session.commit()
    _age(app, [in_review, settled])
    with app.app_context():
        moved = retention.run()
    assert moved["webhooks_deleted"] == 1
    assert _count(app, ProcessedWebhook, ProcessedWebhook.payment_id == in_review) == 1


@pytest.mark.parametrize("days", ["0", "-30", "100000"])
def test_a_call_log_kept_for_no_time_or_forever_is_refused(days: str) -> None:
    with pytest.raises(ConfigError, match="CALL_LOG_RETENTION_DAYS must be 1 to 3650"):
        settings_from_env({"CALL_LOG_RETENTION_DAYS": days})


def test_retention_shorter_than_any_redelivery_is_refused() -> None:
    with pytest.raises(ConfigError, match="RETENTION_DAYS must be at least 35"):
        settings_from_env({"RETENTION_DAYS": "7"})
