"""A payment's story and verdict for the five typical histories: charged, declined,
unknown then resolved by a lookup, resolved by the webhook, and needs_review decided by
an admin; the events in the order they happened."""

from __future__ import annotations

import re
from typing import Any

import requests
from flask import Flask
from flask.testing import FlaskClient

from extensions import db
from models import AdminUser
from services.backoffice.actions import resolve
from services.backoffice.timeline import story
from tests.admin_support import make_admin
from tests.helpers import (
    charge_payment,
    committed_payment,
    reconcile_payment,
    run_maintenance_jobs,
    signed_post,
    stripe_event,
)


def _told(app: Flask, payment_id: int) -> tuple[str, list[str]]:
    with app.app_context():
        found = story(payment_id)
        assert found is not None
        return found.verdict, [f"{e.kind}: {e.text}" for e in found.events]


def test_charged(app: Flask, sandbox: Any) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    verdict, events = _told(app, payment_id)
    assert re.fullmatch(
        r"Charged once: pi_\w+, confirmed by the provider at \d\d:\d\d:\d\d UTC\.", verdict
    )
    assert [e.split(":")[0] for e in events] == ["intent", "call", "transition", "email"]
    assert "charge call, attempt 1 POST /v1/payment_intents: Succeeded (HTTP 200" in events[1]


def test_declined(app: Flask, sandbox: Any) -> None:
    payment_id = committed_payment(app, payment_method="pm_card_chargeDeclined")
    with app.app_context():
        charge_payment(payment_id)
    verdict, _ = _told(app, payment_id)
    assert verdict.startswith("Not charged: generic_decline")


def test_unknown_then_resolved_by_a_lookup(app: Flask, sandbox: Any) -> None:
    fault = sandbox.add_fault("commit_timeout", hold_s=2.5, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    assert _told(app, payment_id)[0].startswith("Outcome unknown: asked the provider 0 times")
    requests.delete(f"{sandbox.url}/_sandbox/faults/{fault}", timeout=5)
    with app.app_context():
        reconcile_payment(payment_id)
    verdict, events = _told(app, payment_id)
    assert verdict.startswith("Charged once: pi_") and "confirmed by the provider" in verdict
    kinds = [e.split(" ")[0] for e in events]
    assert kinds == ["intent:", "call:", "transition:", "call:", "transition:", "email:"]
    assert "pending -> unknown" in events[2] and "unknown -> succeeded" in events[4]


def test_resolved_by_the_webhook(app: Flask, client: FlaskClient, sandbox: Any) -> None:
    sandbox.add_fault("commit_timeout", hold_s=2.5, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    event = stripe_event(payment_id, intent_id="pi_from_webhook", event_id="evt_story")
    signed_post(client, event)
    signed_post(client, event)  # a redelivery: recorded once, shown once
    run_maintenance_jobs(app)
    verdict, events = _told(app, payment_id)
    assert verdict == "Charged once: pi_from_webhook, confirmed by webhook evt_story."
    assert sum("webhook payment_intent.succeeded evt_story" in e for e in events) == 1


def test_needs_review_then_decided_by_an_admin(app: Flask, sandbox: Any) -> None:
    sandbox.add_fault("tamper", field="amount", value=1, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    assert _told(app, payment_id)[0].startswith("Needs a person: ")
    make_admin(app)
    with app.app_context():
        admin = db.session.scalar(db.select(AdminUser))
        assert admin is not None
        email = admin.email
        resolve(payment_id, "succeeded", "checked the provider's dashboard", admin)
    verdict, events = _told(app, payment_id)
    assert verdict.startswith("Charged once: ") and f"decided by {email} at " in verdict
    assert events[-2].startswith("admin: needs_review -> succeeded by admin")
    assert events[-1].startswith("email: email receipt")  # the receipt follows the decision
