"""The call log: every gateway request written after the call, on its own connection (a
rolled-back transaction does not take it along), with what the provider answered; and
the retention job."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import time_machine
from flask import Flask

from extensions import db
from models import ProviderCall
from models.types import utcnow
from services.platform.call_log import purge
from tests.helpers import all_rows, charge_payment, committed_payment, reconcile_payment


def test_every_call_is_logged_with_the_providers_answer(app: Flask, sandbox: Any) -> None:
    fault = sandbox.add_fault("commit_timeout", hold_s=2.5, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)  # times out: unknown
    import requests

    requests.delete(f"{sandbox.url}/_sandbox/faults/{fault}", timeout=5)
    with app.app_context():
        reconcile_payment(payment_id)  # the replay
    made, timed_out, replayed = all_rows(app, ProviderCall)
    assert (made.operation, made.outcome, made.subject_id) == ("customer", "str", None)
    assert (timed_out.operation, timed_out.outcome, timed_out.attempt) == ("charge", "Unknown", 1)
    assert timed_out.http_status is None and "timeout" in (timed_out.error or "").lower()
    assert (timed_out.subject_kind, timed_out.subject_id) == ("charge", payment_id)
    assert timed_out.duration_ms >= 900
    # The lookup's replay is a send of its own, with the lookup's attempt.
    assert (replayed.operation, replayed.outcome, replayed.http_status, replayed.attempt) == (
        "charge_replay",
        "Succeeded",
        200,
        1,
    )
    assert replayed.endpoint == "POST /v1/payment_intents"
    assert (replayed.request_id or "").startswith("req_") and replayed.error is None


def test_the_log_is_written_outside_the_callers_transaction(app: Flask, sandbox: Any) -> None:
    from resilience.gateway import CallContext
    from services.platform.provider_clients import gateway_for

    with app.app_context():
        db.session.execute(db.text("SELECT 1"))  # a transaction of the caller's, open
        gateway_for("stripe").call(CallContext("test"), lambda: None)
        db.session.rollback()
    assert [c.operation for c in all_rows(app, ProviderCall)] == ["test"]


def test_old_calls_leave_the_log(app: Flask, sandbox: Any) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    later = utcnow() + timedelta(days=app.config["CALL_LOG_RETENTION_DAYS"], hours=1)
    with time_machine.travel(later), app.app_context():
        assert purge() == 2  # the charge, and the making of its customer's Stripe Customer
    assert all_rows(app, ProviderCall) == []


def test_the_calls_of_a_payment_in_review_are_kept_past_the_retention(
    app: Flask, sandbox: Any
) -> None:
    """The reported hole: retention deleted the evidence of a payment a person must still
    decide (its calls and webhooks)."""
    from models import Payment, PaymentStatus

    deciding, settled = committed_payment(app), committed_payment(app)
    with app.app_context():
        charge_payment(deciding)
        charge_payment(settled)
        found = db.session.get(Payment, deciding)
        assert found is not None
        found.status = PaymentStatus.NEEDS_REVIEW
        db.session.commit()
    later = utcnow() + timedelta(days=app.config["CALL_LOG_RETENTION_DAYS"], hours=1)
    with time_machine.travel(later), app.app_context():
        # The settled one's call, and the making of each one's Stripe Customer (about no
        # row of ours).
        assert purge() == 3
    assert [call.subject_id for call in all_rows(app, ProviderCall)] == [deciding]


def test_a_refund_in_review_keeps_its_calls_and_a_call_about_no_row_leaves(
    app: Flask, sandbox: Any
) -> None:
    import uuid

    from models import Refund, RefundStatus
    from services.refunds.issue import refund_payment
    from tests.helpers import send_refund

    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
        refund, _ = refund_payment(payment_id, 100, "checked by hand", "ops", uuid.uuid4())
        refund_id = refund.id
        send_refund(refund_id)
        found = db.session.get(Refund, refund_id)
        assert found is not None
        found.status = RefundStatus.NEEDS_REVIEW
        db.session.add(
            ProviderCall(
                provider="stripe",
                operation="backfill",
                started_at=utcnow(),
                duration_ms=1.0,
                outcome="Succeeded",
            )
        )
        db.session.commit()
    later = utcnow() + timedelta(days=app.config["CALL_LOG_RETENTION_DAYS"], hours=1)
    with time_machine.travel(later), app.app_context():
        # The settled payment's charge, the backfill and the making of the Stripe Customer.
        assert purge() == 3
    kept = [(call.subject_kind, call.subject_id) for call in all_rows(app, ProviderCall)]
    assert kept == [("refund", refund_id)]
