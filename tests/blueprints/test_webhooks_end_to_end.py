"""End to end: the sandbox delivers duplicated and reordered webhooks to the app over HTTP
while payments run; final states are right and nothing is counted twice."""

from __future__ import annotations

import time
from typing import Any

import requests
from flask import Flask
from sqlalchemy import func, select

from extensions import db
from models import LedgerEntry, PaymentStatus, PaymentTransition, ProcessedWebhook
from tests.factories import make_customer, make_order, make_payment
from tests.helpers import charge_payment, run_maintenance_jobs


def test_duplicated_and_reordered_webhooks_during_a_run(wired: tuple[Flask, Any]) -> None:
    app, sandbox = wired
    sandbox.add_fault("webhook_duplicate", copies=3)
    sandbox.add_fault("webhook_reorder", max_delay_s=1.0)
    with app.app_context():
        customer = make_customer()
        ids = [make_payment(make_order(customer)).id for _ in range(8)]
        db.session.commit()
        for payment_id in ids:
            charge_payment(payment_id)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        events = requests.get(f"{sandbox.url}/_sandbox/events", timeout=5).json()["data"]
        if len(events) == 8 and all(e["delivered_at"] for e in events):
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"webhooks not delivered: {events}")
    run_maintenance_jobs(app)  # the applications the web requests queued
    with app.app_context():
        statuses = db.session.scalars(select(PaymentTransition.to_status)).all()
        assert sorted(s.value for s in statuses) == ["succeeded"] * 8  # one move each
        assert db.session.scalar(select(func.count()).select_from(ProcessedWebhook)) == 8
        states = db.session.scalars(select(ProcessedWebhook.state)).all()
        assert set(states) == {"applied"}
        assert db.session.scalar(select(func.count()).select_from(LedgerEntry)) == 0
        from models import Payment

        assert {p.status for p in db.session.scalars(select(Payment))} == {PaymentStatus.SUCCEEDED}
    charges = sandbox.charges()
    assert len(charges["data"]) == 8 and charges["double_charged_payments"] == []
