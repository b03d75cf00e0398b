"""A pending payment's customer is told when its provider is paused: while the breaker
is open, with the time of the next try; while a person holds it open, without one."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import Flask

from extensions import db
from models import Payment, PaymentStatus
from models.types import utcnow
from services.payments.waiting import provider_pause
from services.platform.provider_clients import breaker_for
from tests.helpers import charge_payment, committed_payment, payment, tune_breaker


def _pause(app: Flask, payment_id: int) -> Any:
    with app.app_context():
        found = db.session.get(Payment, payment_id)
        assert found is not None
        return provider_pause(found)


def test_nothing_to_say_while_the_provider_works(app: Flask) -> None:
    assert _pause(app, committed_payment(app)) is None
    with app.app_context():
        breaker_for("stripe").force("open", actor="ops", reason="incident 1")
    assert _pause(app, committed_payment(app, status=PaymentStatus.UNKNOWN)) is None


def test_held_open_by_a_person_there_is_no_estimate(app: Flask) -> None:
    with app.app_context():
        breaker_for("stripe").force("open", actor="ops", reason="incident 2")
    pause = _pause(app, committed_payment(app))
    assert pause is not None and pause.provider == "stripe" and pause.retry_at is None


def test_opened_by_failures_the_next_try_is_the_payments_own(
    app: Flask, sandbox: Any, make_app: Any
) -> None:
    worker = make_app()  # a worker whose breaker opens at the first failure
    tune_breaker(worker, "stripe", failure_threshold=1)
    sandbox.add_fault("error", status=503, dialect="stripe", endpoint="create")
    first, queued = committed_payment(app), committed_payment(app)
    with worker.app_context():
        charge_payment(first)  # fails: the breaker opens
        charge_payment(queued)  # refused by the open breaker: deferred, never sent
    waiting = payment(app, queued)
    assert waiting.status == PaymentStatus.PENDING and waiting.first_sent_at is None
    pause = _pause(app, queued)
    assert pause is not None and pause.retry_at is not None
    assert waiting.next_attempt_at is not None and pause.retry_at >= waiting.next_attempt_at
    assert utcnow() < pause.retry_at < utcnow() + timedelta(minutes=5)
