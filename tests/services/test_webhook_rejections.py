"""An event that cannot apply is set aside (rejected, with the reason) and never stops
the events behind it, in the apply job and in the pending retry alike."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from devtools.servers import free_port
from extensions import db
from models import PaymentStatus, ProcessedWebhook, WebhookState
from services.backoffice.dashboard import webhook_stats
from services.webhooks.events import retry_pending_events
from tests.helpers import (
    committed_payment,
    payment,
    run_maintenance_jobs,
    signed_post,
    stripe_event,
)

BAD_IDS = ["99999999999", "2147483648", "-1", "0", "1e3", "٣", "12 ", ""]


def _states(app: Flask) -> dict[str, tuple[str, str]]:
    with app.app_context():
        rows = db.session.execute(
            select(ProcessedWebhook.event_id, ProcessedWebhook.state, ProcessedWebhook.note)
        ).all()
    return {event_id: (state, note) for event_id, state, note in rows}


@pytest.mark.parametrize("bad_id", BAD_IDS)
def test_a_bad_payment_id_is_set_aside_by_the_apply_job(
    app: Flask, client: FlaskClient, bad_id: str
) -> None:
    good = committed_payment(app)
    bad_event = stripe_event(None, intent_id="pi_bad", event_id="evt_bad")
    bad_event["data"]["object"]["metadata"] = {"payment_id": bad_id}
    assert signed_post(client, bad_event).status_code == 200
    signed_post(client, stripe_event(good, intent_id="pi_good", event_id="evt_good"))
    run_maintenance_jobs(app)
    states = _states(app)
    assert states["evt_bad"][0] == WebhookState.REJECTED
    assert "is not a payment id" in states["evt_bad"][1]
    assert states["evt_good"][0] == WebhookState.APPLIED
    assert payment(app, good).status == PaymentStatus.SUCCEEDED
    with app.app_context():
        assert webhook_stats()["rejected"] == 1


def test_a_bad_event_does_not_block_the_pending_retry(app: Flask, make_app: Any) -> None:
    """Recorded while Redis was down (no apply jobs): the periodic retry meets them."""
    good = committed_payment(app)
    no_redis = make_app(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0").test_client()
    bad_event = stripe_event(None, intent_id="pi_bad", event_id="evt_bad")
    bad_event["data"]["object"]["metadata"] = {"payment_id": "99999999999"}
    signed_post(no_redis, bad_event)
    signed_post(no_redis, stripe_event(good, intent_id="pi_good", event_id="evt_good"))
    with app.app_context():
        assert retry_pending_events() == 2
        assert retry_pending_events() == 0  # the rejected one is never picked up again
    states = _states(app)
    assert states["evt_bad"][0] == WebhookState.REJECTED
    assert states["evt_good"][0] == WebhookState.APPLIED
    assert payment(app, good).status == PaymentStatus.SUCCEEDED
