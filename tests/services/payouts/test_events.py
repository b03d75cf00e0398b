"""Payouts as Stripe tells them: the sandbox pays our balance out (and has one refused),
its events are delivered to our endpoint (signed, recorded, applied by the jobs); a
payout's status only moves forward, whatever order its events come in, and an event
that says another amount changes nothing."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
import stripe
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import PayoutStatus, ProviderPayout, WebhookState
from providers.stripe.webhooks import parse_stripe
from services.payouts.events import apply_payout_event
from tests.helpers import run_maintenance_jobs, sandbox_events, signed_post
from tests.sandbox_support import sdk_charge
from tests.webhook_support import recorded

DAY = 86_400


def _payout(app: Flask, payout_id: str) -> ProviderPayout:
    with app.app_context():
        found = db.session.scalar(
            select(ProviderPayout).where(ProviderPayout.payout_id == payout_id)
        )
        assert found is not None
        db.session.expunge(found)
        return found


def _deliver(client: FlaskClient, sandbox: Any, kind: str) -> None:
    for event in sandbox_events(sandbox, kind):
        assert signed_post(client, event).status_code == 200


def test_a_payout_and_a_refused_one_as_the_sandbox_tells_them(
    app: Flask, client: FlaskClient, sandbox: Any, sdk: stripe.StripeClient
) -> None:
    sdk_charge(sdk, 1000)
    sandbox.age_balance(2 * DAY)
    [paid] = sandbox.pay_out()
    sdk_charge(sdk, 2000)
    sandbox.age_balance(2 * DAY)
    [refused] = sandbox.pay_out(fail=True)
    for kind in ("payout.created", "payout.paid", "payout.failed"):
        _deliver(client, sandbox, kind)
    run_maintenance_jobs(app)
    first, second = _payout(app, paid["id"]), _payout(app, refused["id"])
    assert (first.status, first.amount_minor, first.currency) == (
        PayoutStatus.PAID,
        paid["amount"],
        "EUR",
    )
    assert first.arrival_date is not None
    assert (second.status, second.amount_minor, second.failure_code) == (
        PayoutStatus.FAILED,
        refused["amount"],
        "account_closed",
    )


def _event(event_type: str, status: str, *, amount: int = 2605, **more: Any) -> dict[str, Any]:
    return {
        "id": f"evt_{uuid.uuid4().hex[:12]}",
        "object": "event",
        "type": event_type,
        "created": more.pop("created", int(time.time())),
        "data": {
            "object": {
                "id": "po_test",
                "object": "payout",
                "amount": amount,
                "currency": "eur",
                "status": status,
                "arrival_date": int(time.time()) + DAY,
                **more,
            }
        },
    }


def _apply(payload: dict[str, Any]) -> tuple[str, str]:
    event = parse_stripe(payload)
    record = recorded(event)
    apply_payout_event("stripe", event, record)
    return record.state, record.note or ""


def _status() -> PayoutStatus:
    found = db.session.scalar(select(ProviderPayout.status))
    assert found is not None
    return found


def test_a_payouts_status_moves_only_forward(app_ctx: Flask) -> None:
    now = int(time.time())
    assert _apply(_event("payout.paid", "paid", created=now))[0] == WebhookState.APPLIED
    state, note = _apply(_event("payout.created", "pending", created=now - 60))  # late
    assert (state, note) == (
        WebhookState.IGNORED,
        "payout po_test is paid already: pending is older",
    )
    assert _status() == PayoutStatus.PAID
    # Stripe documents it: a payout reported paid may fail later.
    failed = _event("payout.failed", "failed", created=now + 60, failure_code="account_closed")
    assert _apply(failed) == (WebhookState.APPLIED, "payout po_test paid -> failed")
    assert _apply(_event("payout.paid", "paid", created=now + 120))[0] == WebhookState.IGNORED
    assert _status() == PayoutStatus.FAILED
    assert db.session.scalar(select(ProviderPayout.failure_code)) == "account_closed"


@pytest.mark.parametrize(
    ("first", "then", "said"),
    [
        ({}, {"amount": 2604}, "payout po_test is €26.05, this event says €26.04: nothing changed"),
        (
            {},
            {"currency": "usd"},
            "payout po_test is €26.05, this event says $26.05: nothing changed",
        ),
    ],
)
def test_an_event_that_tells_another_amount_changes_nothing(
    app_ctx: Flask, first: dict[str, Any], then: dict[str, Any], said: str
) -> None:
    _apply(_event("payout.created", "pending", **first))
    assert _apply(_event("payout.paid", "paid", **then)) == (WebhookState.REJECTED, said)
    assert _status() == PayoutStatus.PENDING


@pytest.mark.parametrize(
    ("fields", "state", "said"),
    [
        ({"amount": None}, WebhookState.REJECTED, "a payout of None: not a payout of ours"),
        ({"amount": -5}, WebhookState.REJECTED, "a payout of -€0.05: not a payout of ours"),
        ({"currency": "xx"}, WebhookState.REJECTED, "a payout in 'XX': not a currency we know"),
        ({"status": "lost"}, WebhookState.IGNORED, "unknown payout status 'lost': nothing changed"),
    ],
)
def test_an_event_that_cannot_be_a_payout_of_ours_records_nothing(
    app_ctx: Flask, fields: dict[str, Any], state: WebhookState, said: str
) -> None:
    payload = _event("payout.paid", "paid")
    payload["data"]["object"].update(fields)
    assert _apply(payload) == (state, said)
    assert db.session.scalar(select(ProviderPayout)) is None


def test_a_payout_event_without_its_payout_is_set_aside(app_ctx: Flask) -> None:
    from models.types import utcnow
    from providers.events import ProviderEvent

    event = ProviderEvent("evt_1", "payout.paid", utcnow(), None, "po_1", kind="payout")
    record = recorded(event)
    assert apply_payout_event("stripe", event, record) == WebhookState.REJECTED
    assert record.note == "a payout event without its payout"
