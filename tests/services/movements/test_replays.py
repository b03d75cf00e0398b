"""A lookup's replay of the key is a send: recorded before it leaves, and a replay that
may still be running at Stripe (a timeout, 409 idempotency_key_in_use) ends the lookup
Unknown. Between a send and Absent there is always a full settle window."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import time_machine
from flask import Flask
from sqlalchemy import select

from extensions import db
from models import Payment, PaymentStatus, ProviderCall
from models.types import utcnow
from providers.outcomes import Unknown
from providers.stripe.client import SETTLE_S
from services.payments.kind import request_for
from tests.helpers import charge_payment, committed_payment, payment, reconcile_payment
from tests.providers.stripe.support import client


def _released(app: Flask, payment_id: int) -> None:
    """The next lookup may start now (as its scheduled job would, later)."""
    with app.app_context():
        db.session.get_one(Payment, payment_id).lease_expires_at = None
        db.session.commit()


def _calls(app: Flask, payment_id: int) -> list[tuple[str, int | None, str]]:
    with app.app_context():
        rows = db.session.execute(
            select(ProviderCall.operation, ProviderCall.attempt, ProviderCall.outcome)
            .where(ProviderCall.subject_id == payment_id)
            .order_by(ProviderCall.id)
        ).all()
    return [tuple(r) for r in rows]  # type: ignore[misc]  # a Row is a tuple at run time


def test_a_replay_that_hangs_or_meets_its_key_in_use_never_ends_in_failed(
    app: Flask, sandbox: Any
) -> None:
    # The first send never reached Stripe: a 502 from its edge (and on each keyed retry).
    sandbox.add_fault("error", status=502, count=3, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    sent = payment(app, payment_id)
    assert sent.status == PaymentStatus.UNKNOWN and sandbox.succeeded_charges(str(payment_id)) == 0
    # Minutes later the replay is the request that runs, slowly: past our read timeout
    # (and its keyed retry, which meets the first attempt still running).
    sandbox.add_fault("hang", seconds=4, count=3, dialect="stripe", endpoint="create")
    with time_machine.travel(utcnow() + timedelta(minutes=7), tick=True):
        with app.app_context():
            reconcile_payment(payment_id)
        replayed = payment(app, payment_id)
        assert replayed.status == PaymentStatus.UNKNOWN, replayed.last_error
        assert "replay may still be running" in (replayed.last_error or "")
        # Recorded like every send: its time, its count, its row in the call log.
        assert replayed.send_count == 2 and replayed.first_sent_at == sent.first_sent_at
        assert replayed.last_sent_at and replayed.last_sent_at > utcnow() - timedelta(seconds=30)
        assert [c[:2] for c in _calls(app, payment_id)] == [("charge", 1), ("charge_replay", 1)]
        endpoints = {r["endpoint"] for r in sandbox.requests_log(dialect="stripe")}
        # The first send made its customer's Stripe Customer; nothing read after that send.
        assert endpoints == {"customer", "create"}
        # At once again, while it still runs there: 409 idempotency_key_in_use.
        _released(app, payment_id)
        with app.app_context():
            reconcile_payment(payment_id)
        in_use = payment(app, payment_id)
        assert in_use.status == PaymentStatus.UNKNOWN
        assert "idempotency_key_in_use" in (in_use.last_error or "")
        assert in_use.send_count == 3
        # The complete list, read now, finds nothing, and proves nothing either.
        with app.app_context():
            request = request_for(db.session.get_one(Payment, payment_id), sent.first_sent_at)
        read = client(sandbox).lookup(request)
        assert isinstance(read, Unknown) and "may still be running" in read.reason
        deadline = time.monotonic() + 10
        while not sandbox.succeeded_charges(str(payment_id)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sandbox.succeeded_charges(str(payment_id)) == 1  # the replay did charge
    # A later lookup, past the settle window, finds what the replay did.
    with time_machine.travel(utcnow() + timedelta(minutes=7, seconds=SETTLE_S), tick=True):
        _released(app, payment_id)
        with app.app_context():
            reconcile_payment(payment_id)
    settled = payment(app, payment_id)
    assert settled.status == PaymentStatus.SUCCEEDED, settled.last_error
    assert sandbox.succeeded_charges(str(payment_id)) == 1


def test_a_stored_answer_is_no_new_send_and_the_records_are_read(app: Flask, sandbox: Any) -> None:
    # Stripe stored a 500 under the key before anything was charged: every replay answers
    # it from the store (Idempotent-Replayed), nothing runs again, and the list decides.
    sandbox.add_fault("error", status=500, count=1, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    sent = payment(app, payment_id)
    assert sent.status == PaymentStatus.UNKNOWN
    with time_machine.travel(utcnow() + timedelta(minutes=10), tick=True), app.app_context():
        reconcile_payment(payment_id)
    failed = payment(app, payment_id)
    assert failed.status == PaymentStatus.FAILED, failed.last_error
    assert failed.last_sent_at == sent.last_sent_at  # the stored answer moved nothing
    assert failed.send_count == 2  # yet it was a request, counted and logged
    assert [c[0] for c in _calls(app, payment_id)] == ["charge", "charge_replay", "charge_lookup"]
    assert sandbox.succeeded_charges(str(payment_id)) == 0
