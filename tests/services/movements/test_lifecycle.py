"""One lifecycle for charges and refunds: the four places where the refunds' copy had
drifted from the charges' original, each shown on a refund (services/movements/)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from extensions import db
from models import Refund, RefundStatus, RefundTransition, TransitionSource
from models.types import utcnow
from services.platform import day_counts
from services.platform.metrics import REPORT_MISMATCHES
from services.platform.provider_clients import breaker_for
from services.refunds.issue import refund_payment
from services.refunds.sending import reconcile_refund, send_refund
from tests.helpers import charged, committed_payment, override_settings, sandbox_refunds


def _refund(app: Flask, provider: str = "stripe", amount: int = 400) -> int:
    payment_id = charged(app, committed_payment(app, provider=provider))
    with app.app_context():
        refund, _ = refund_payment(payment_id, amount, "customer asked", "ops", uuid.uuid4())
        return refund.id


def _get(app: Flask, refund_id: int) -> Refund:
    with app.app_context():
        refund = db.session.get(Refund, refund_id)
        assert refund is not None
        db.session.expunge(refund)
        return refund


def test_an_open_circuit_defers_a_refund_until_the_breaker_may_let_it_through(
    app: Flask, sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Drift 1: refunds deferred by CHARGE_DEFER_S, ignoring the breaker's retry time."""
    refund_id = _refund(app)
    override_settings(monkeypatch, app, CHARGE_DEFER_S=1)
    with app.app_context():
        breaker = breaker_for("stripe")
        for _ in range(int(breaker.config.failure_threshold)):
            breaker.record(is_failure=True, duration_s=0.01)  # opens for open_s (15 s)
        send_refund(refund_id)
    refund = _get(app, refund_id)
    assert refund.status == RefundStatus.PENDING and refund.first_sent_at is None
    assert refund.next_attempt_at is not None
    assert refund.next_attempt_at - utcnow() > timedelta(seconds=10)  # the breaker's, not 1 s
    assert sandbox_refunds(sandbox) == []


def test_a_refund_sent_is_recorded_as_the_refund_jobs_not_a_charges(
    app: Flask, sandbox: Any
) -> None:
    """Drift 2: refund sends were recorded with TransitionSource.CHARGE."""
    refund_id = _refund(app)
    with app.app_context():
        send_refund(refund_id)
        sources = db.session.scalars(
            select(RefundTransition.source).where(RefundTransition.refund_id == refund_id)
        ).all()
    assert list(sources)[-1] == TransitionSource.REFUND
    assert TransitionSource.CHARGE not in sources


def test_a_refund_answer_that_does_not_match_counts_as_a_mismatch(app: Flask, sandbox: Any) -> None:
    """Drift 3: the dashboard's mismatch count (and the metric) left refunds out."""
    refund_id = _refund(app)
    sandbox.add_fault("tamper", field="amount", value=1, dialect="stripe", endpoint="refund")
    metric = REPORT_MISMATCHES.labels("stripe", TransitionSource.REFUND.value)
    before = metric._value.get()
    with app.app_context():
        counted = (day_counts.today_counts(day_counts.REPORT_MISMATCHES) or [0])[0]
        send_refund(refund_id)
        assert day_counts.today_counts(day_counts.REPORT_MISMATCHES) == [counted + 1]
    assert _get(app, refund_id).status == RefundStatus.NEEDS_REVIEW
    assert metric._value.get() == before + 1


def test_the_key_less_re_send_of_a_refund_is_recorded_before_it_leaves(
    app: Flask, sandbox: Any
) -> None:
    """Drift 4: the acquirer's re-send of a refund it never got was not recorded as sent
    (first_sent_at, send_count) before the call, as the charge's re-send is."""
    refund_id = _refund(app, provider="acquirer")
    with app.app_context():
        refund = db.session.get(Refund, refund_id)
        assert refund is not None
        # Sent once, answer lost, and the acquirer never got it.
        refund.status, refund.first_sent_at, refund.send_count = (
            RefundStatus.UNKNOWN,
            utcnow(),
            1,
        )
        db.session.commit()
        reconcile_refund(refund_id)  # looks up (absent), then re-sends
    refund = _get(app, refund_id)
    assert refund.status == RefundStatus.SUCCEEDED
    assert refund.send_count == 2
    assert [r["amount"] for r in sandbox_refunds(sandbox, dialect="acquirer")] == [400]
