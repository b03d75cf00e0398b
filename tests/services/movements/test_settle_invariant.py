"""The state machine's invariant for every send, a lookup's replays included: between the
last request that may have run at the provider and "Absent" (failed: the provider has no
record) there is always a full settle window, and a payment the provider charged never
ends failed. Random first sends, replay faults and waits, against the sandbox."""

from __future__ import annotations

import random
import time
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from flask import Flask
from sqlalchemy import select

from extensions import db
from models import Payment, PaymentStatus, PaymentTransition, TransitionSource
from models.types import utcnow
from providers.stripe.client import SETTLE_S
from tests.helpers import charge_payment, committed_payment, reconcile_payment

HANG_S = 4.0  # longer than a call's whole budget (PROVIDER_CALL_BUDGET_S)
# What goes wrong with the first send and with a replay (fault kind and parameters).
FIRST_SENDS = [
    {"kind": "error", "status": 502, "count": 3},  # never reached Stripe
    {"kind": "commit_timeout", "hold_s": 1.5, "count": 3},  # charged, the answer lost
    {"kind": "error", "status": 500, "count": 1},  # a 500 stored before anything ran
]
REPLAYS = [
    None,  # Stripe answers (a fresh run, or the stored answer)
    {"kind": "hang", "seconds": HANG_S, "count": 3},  # runs, past our read timeout
    {"kind": "error", "status": 502, "count": 3},  # its edge fails again
]
WAITS_S = [0, 30, SETTLE_S + 5, 600]


def _add(sandbox: Any, fault: dict[str, Any] | None) -> None:
    if fault is not None:
        params = {k: v for k, v in fault.items() if k != "kind"}
        sandbox.add_fault(fault["kind"], dialect="stripe", endpoint="create", **params)


def _check(app: Flask, sandbox: Any, payment_id: int) -> PaymentStatus:
    with app.app_context():
        found = db.session.get_one(Payment, payment_id)
        failed = db.session.scalars(
            select(PaymentTransition).where(
                PaymentTransition.payment_id == payment_id,
                PaymentTransition.to_status == PaymentStatus.FAILED,
                PaymentTransition.source == TransitionSource.RECONCILE,
            )
        ).first()
        if failed is not None:
            assert found.last_sent_at is not None
            waited_s = (failed.created_at - found.last_sent_at).total_seconds()
            assert waited_s >= SETTLE_S, (waited_s, failed.reason)
            time.sleep(HANG_S + 0.5)  # a request still running there has finished now
            assert sandbox.succeeded_charges(str(payment_id)) == 0, failed.reason
        found.lease_expires_at = None  # the next lookup may start (as its job would)
        db.session.commit()
        return found.status


# Seeds whose first lookup, a settle window or more after the first send, covers every
# pair of first send and replay (9 of 9); the later lookups are drawn as they come.
SEEDS = (0, 4, 5, 8, 9, 12, 17, 21, 35)


@pytest.mark.parametrize("seed", SEEDS)
def test_absent_comes_a_settle_window_after_the_last_send(
    app: Flask, sandbox: Any, seed: int
) -> None:
    draw = random.Random(seed)
    sandbox.clear_faults()
    _add(sandbox, draw.choice(FIRST_SENDS))
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    sandbox.clear_faults()
    at = utcnow()
    for _ in range(4):
        at += timedelta(seconds=draw.choice(WAITS_S))
        _add(sandbox, draw.choice(REPLAYS))
        with time_machine.travel(at, tick=True):
            with app.app_context():
                reconcile_payment(payment_id)
            status = _check(app, sandbox, payment_id)
        sandbox.clear_faults()
        if status != PaymentStatus.UNKNOWN:
            break
