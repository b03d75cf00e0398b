"""Refund events: applied like payment events, before our own answer, once however often
they come, in any order; one that does not match the refund goes to review."""

from __future__ import annotations

import uuid
from typing import Any

import requests
from flask import Flask
from flask.testing import FlaskClient

from extensions import db
from models import Order, OrderStatus, ProcessedWebhook, Refund, RefundStatus
from services.refunds.issue import refund_payment
from services.refunds.sending import send_refund
from tests.helpers import (
    charged,
    committed_payment,
    rows,
    run_maintenance_jobs,
    sandbox_refunds,
    signed_post,
)

AUTH = {"Authorization": "Bearer sk_test_sandbox"}


def _events(sandbox: Any, kind: str) -> list[dict[str, Any]]:
    """The sandbox's events of a type, in full, as Stripe would deliver them."""
    listed = [e for e in sandbox.events() if e["type"] == kind]
    return [
        requests.get(f"{sandbox.url}/v1/events/{e['id']}", headers=AUTH, timeout=5).json()
        for e in listed
    ]


def _refund_state(app: Flask, refund_id: int) -> tuple[RefundStatus, OrderStatus | None]:
    with app.app_context():
        refund = db.session.get(Refund, refund_id)
        assert refund is not None
        order = db.session.get(Order, refund.order_id) if refund.order_id else None
        return refund.status, order.status if order else None


def _lost_answer(app: Flask, sandbox: Any, amount: int | None = None) -> int:
    """A refund the provider made whose answer we never got (we are unknown)."""
    payment_id = charged(app, committed_payment(app))
    with app.app_context():
        refund, _ = refund_payment(payment_id, amount, "customer asked", "ops", uuid.uuid4())
        refund_id = refund.id
    fault = sandbox.add_fault("commit_timeout", hold_s=2.5, dialect="stripe", endpoint="refund")
    with app.app_context():
        send_refund(refund_id)
    requests.delete(f"{sandbox.url}/_sandbox/faults/{fault}", timeout=5)
    assert _refund_state(app, refund_id)[0] == RefundStatus.UNKNOWN
    return refund_id


def test_the_event_before_our_own_answer_settles_the_refund(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    refund_id = _lost_answer(app, sandbox)
    [event] = _events(sandbox, "refund.created")
    assert signed_post(client, event).status_code == 200
    assert signed_post(client, event).status_code == 200  # a redelivery: recorded once
    run_maintenance_jobs(app)
    assert _refund_state(app, refund_id) == (RefundStatus.SUCCEEDED, OrderStatus.REFUNDED)
    assert rows(app, ProcessedWebhook) == 1
    with app.app_context():
        from services.refunds.sending import reconcile_refund

        reconcile_refund(refund_id)  # finds it settled: no lease, no call, no change
    assert _refund_state(app, refund_id)[0] == RefundStatus.SUCCEEDED
    assert len(sandbox_refunds(sandbox)) == 1


def test_events_in_any_order(app: Flask, client: FlaskClient, sandbox: Any) -> None:
    refund_id = _lost_answer(app, sandbox, 250)
    [charge_refunded] = _events(sandbox, "charge.refunded")
    [created] = _events(sandbox, "refund.created")
    for event in (charge_refunded, created, charge_refunded):  # the charge's event first
        signed_post(client, event)
    run_maintenance_jobs(app)
    assert _refund_state(app, refund_id) == (RefundStatus.SUCCEEDED, OrderStatus.PARTIALLY_REFUNDED)
    with app.app_context():
        notes = {w.event_type: w.state.value for w in db.session.query(ProcessedWebhook)}
    assert notes == {"charge.refunded": "ignored", "refund.created": "applied"}


def test_a_refund_event_that_does_not_match_goes_to_review(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    refund_id = _lost_answer(app, sandbox, 250)
    [event] = _events(sandbox, "refund.created")
    event["data"]["object"]["amount"] = 999
    event["id"] = "evt_forged_amount"
    signed_post(client, event)
    run_maintenance_jobs(app)
    assert _refund_state(app, refund_id)[0] == RefundStatus.NEEDS_REVIEW


def test_a_failed_refund_event_after_success_goes_to_review(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    payment_id = charged(app, committed_payment(app))
    with app.app_context():
        refund, _ = refund_payment(payment_id, None, "customer asked", "ops", uuid.uuid4())
        send_refund(refund.id)
        refund_id = refund.id
    [event] = _events(sandbox, "refund.created")
    event["id"], event["type"] = "evt_later_failure", "refund.failed"
    event["created"] += 5
    event["data"]["object"].update(status="failed", failure_reason="lost_or_stolen_card")
    signed_post(client, event)
    run_maintenance_jobs(app)
    # The money did not reach the customer after all: a person decides, with both facts.
    assert _refund_state(app, refund_id)[0] == RefundStatus.NEEDS_REVIEW
