"""Failover: a never-sent payment may move to the fallback; a sent or unknown one never."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from extensions import db
from models import PaymentStatus, PaymentTransition
from models.types import utcnow
from services.platform.provider_clients import breaker_for
from tests.helpers import (
    charge_payment,
    committed_payment,
    payment,
    queued_job_ids,
    reconcile_payment,
    run_jobs,
    scheduled_job_ids,
)


@pytest.fixture
def failover(app: Flask, make_app: Any) -> Iterator[Flask]:
    """An app with failover to the acquirer (its own, not the shared one), stripe down."""
    with_failover = make_app(PAYMENTS_FAILOVER_PROVIDER="acquirer")
    with with_failover.app_context():
        breaker_for("stripe").force("open", actor="test", reason="stripe is down")
    yield with_failover


def test_a_never_sent_payment_fails_over(failover: Flask, sandbox: Any) -> None:
    # A token the fallback can charge too (what a token vault's network token would be;
    # here the acquirer's test token).
    payment_id = committed_payment(failover, payment_method="card_ok")
    with failover.app_context():
        charge_payment(payment_id)
    moved = payment(failover, payment_id)
    assert moved.provider == "acquirer" and moved.status == PaymentStatus.PENDING
    assert queued_job_ids(failover, "acquirer") == [f"charge-{payment_id}-acquirer"]
    with failover.app_context():
        reasons = db.session.scalars(select(PaymentTransition.reason)).all()
    assert any("rerouted from stripe to acquirer" in r for r in reasons)
    run_jobs(failover, "acquirer")
    assert payment(failover, payment_id).status == PaymentStatus.SUCCEEDED
    assert sandbox.requests_log(dialect="stripe") == []
    assert len(sandbox.charges(dialect="acquirer", status="succeeded")["data"]) == 1


def test_a_card_only_its_own_provider_can_charge_never_fails_over(
    failover: Flask, sandbox: Any
) -> None:
    payment_id = committed_payment(failover)  # a Stripe PaymentMethod (pm_...)
    with failover.app_context():
        charge_payment(payment_id)
    kept = payment(failover, payment_id)
    assert kept.provider == "stripe" and kept.status == PaymentStatus.PENDING
    assert kept.next_attempt_at is not None  # deferred until Stripe's circuit lets it through
    assert queued_job_ids(failover, "acquirer") == []
    assert sandbox.requests_log() == []


def test_a_payment_that_may_have_been_sent_never_fails_over(failover: Flask, sandbox: Any) -> None:
    payment_id = committed_payment(
        failover, payment_method="card_ok", first_sent_at=utcnow(), send_count=1
    )
    with failover.app_context():
        charge_payment(payment_id)
    kept = payment(failover, payment_id)
    assert kept.provider == "stripe" and kept.status == PaymentStatus.PENDING
    assert kept.next_attempt_at is not None  # deferred until the circuit lets it through
    assert queued_job_ids(failover, "acquirer") == []
    assert sandbox.requests_log() == []


def test_an_unknown_payment_never_fails_over(failover: Flask, sandbox: Any) -> None:
    payment_id = committed_payment(
        failover, status=PaymentStatus.UNKNOWN, first_sent_at=utcnow(), send_count=1
    )
    with failover.app_context():
        reconcile_payment(payment_id)
    kept = payment(failover, payment_id)
    assert kept.provider == "stripe" and kept.status == PaymentStatus.UNKNOWN
    assert kept.reconcile_attempts == 0  # the open circuit did not use up a lookup
    assert [j for j in scheduled_job_ids(failover) if j.endswith("-deferred")]
    assert sandbox.requests_log() == []


def test_failover_is_off_by_default(app: Flask, sandbox: Any) -> None:
    assert app.config["PAYMENTS_FAILOVER_PROVIDER"] == ""
    payment_id = committed_payment(app)
    with app.app_context():
        breaker_for("stripe").force("open", actor="test", reason="stripe is down")
        charge_payment(payment_id)
    assert payment(app, payment_id).provider == "stripe"
