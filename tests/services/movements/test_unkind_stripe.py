"""Stripe answered unkindly: a create that Stripe stored as a 500 under its key is
replayed as that 500 by every lookup (`Idempotent-Replayed: true`). A stored answer says
nothing of Stripe's health now: it is no failure and never the half-open probe's verdict,
so a healthy Stripe closes its breaker and the payment resolves. And a match never rests
on editable metadata alone."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from typing import Any

import time_machine
from flask import Flask

from models import PaymentStatus
from models.types import utcnow
from services.platform.provider_clients import breaker_for
from tests.fault_proxy import AFTER, REWRITE, fault_proxy
from tests.helpers import (
    charge_payment,
    committed_payment,
    payment,
    reconcile_payment,
    tune_breaker,
)


def test_a_replayed_stored_500_leaves_a_healthy_stripe_closed(
    app: Flask, make_app: Any, sandbox: Any
) -> None:
    tuned = make_app()
    tune_breaker(tuned, "stripe", failure_threshold=1, open_s=1.0, open_max_s=1.0)
    sandbox.add_fault(
        "error", status=500, phase="stored", count=1, dialect="stripe", endpoint="create"
    )
    payment_id = committed_payment(tuned)
    with tuned.app_context():
        charge_payment(payment_id)  # a live 500: one failure opens this breaker
        opened = breaker_for("stripe").snapshot()
    assert opened["state"] == "open" and "charge: Unknown" in opened["last_failure"]
    time.sleep(1.2)  # Redis' clock: the breaker lets one probe through now
    with time_machine.travel(utcnow() + timedelta(minutes=10), tick=True):
        with tuned.app_context():
            # The replay answers the stored 500 (neutral: the probe passes on), then the
            # read of Stripe's intents answers live and closes the circuit.
            reconcile_payment(payment_id)
            closed = breaker_for("stripe").snapshot()
        assert payment(tuned, payment_id).status == PaymentStatus.SUCCEEDED
    assert closed["state"] == "closed", closed["recent_events"]
    assert sandbox.succeeded_charges(str(payment_id)) == 1


def _without_metadata(body: bytes) -> bytes:
    """A list of intents as Stripe answers it after an operator cleared their metadata."""
    page = json.loads(body)
    for intent in page.get("data", []):
        intent["metadata"] = {}
    return json.dumps(page).encode()


def test_a_charged_intent_whose_metadata_was_edited_is_never_shown_failed(
    app: Flask, make_app: Any, sandbox: Any
) -> None:
    """Our metadata removed from the charged intent in Stripe's Dashboard, a stored 500,
    search down: the list around our sends holds an intent with our amount, currency and
    customer and no metadata, so absence is not proven: unknown, the candidate named."""
    sandbox.add_fault(
        "error", status=500, phase="stored", count=1, dialect="stripe", endpoint="create"
    )
    sandbox.add_fault("search_lag", seconds=3600, dialect="stripe")
    with fault_proxy(sandbox.url) as proxy:
        proxy.add(
            REWRITE,
            r"^/v1/payment_intents(/search)?\?",
            method="GET",
            times=None,
            rewrite=_without_metadata,
        )
        edited = make_app(STRIPE_API_BASE=proxy.url)
        payment_id = committed_payment(edited)
        with edited.app_context():
            charge_payment(payment_id)
        assert payment(edited, payment_id).status == PaymentStatus.UNKNOWN
        with time_machine.travel(utcnow() + timedelta(minutes=10), tick=True):
            with edited.app_context():
                reconcile_payment(payment_id)
            looked_up = payment(edited, payment_id)
    assert looked_up.status == PaymentStatus.UNKNOWN, looked_up.last_error
    [intent] = sandbox.charges(payment_ref=str(payment_id), status="succeeded")["data"]
    assert intent["object_id"] in (looked_up.last_error or "")
    assert proxy.count("GET", r"^/v1/payment_intents\?") >= 1  # the list was read


def test_an_edges_429_after_stripe_charged_is_unknown_and_charged_once(
    app: Flask, make_app: Any, sandbox: Any
) -> None:
    """A balancer's 429 (no Request-Id, no Stripe error object) after Stripe made the
    charge: not "not sent", so the first send's time stays and the lookup finds it."""
    with fault_proxy(sandbox.url) as proxy:
        proxy.add(AFTER, r"^/v1/payment_intents$", method="POST", status=429, times=2)
        edged = make_app(STRIPE_API_BASE=proxy.url)
        payment_id = committed_payment(edged)
        with edged.app_context():
            charge_payment(payment_id)
        sent = payment(edged, payment_id)
        assert sent.status == PaymentStatus.UNKNOWN and sent.first_sent_at is not None
        with edged.app_context():
            reconcile_payment(payment_id)  # the replay with the key: Stripe's stored answer
    assert payment(edged, payment_id).status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(payment_id)) == 1
