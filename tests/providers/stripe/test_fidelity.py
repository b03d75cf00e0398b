"""The four client bugs a real Stripe account would trigger, each against a sandbox that
behaves like Stripe: a pinned Stripe-Version on every call, a create a recent account
accepts, lookups whose errors are never declines, and backfill over every page."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
import requests
import time_machine
from flask import Flask
from sqlalchemy import select

from extensions import db, redis_client
from models import Payment, PaymentStatus
from models.types import utcnow
from providers.outcomes import Absent, Succeeded, Unknown
from providers.stripe import API_VERSION, StripeProvider
from services.platform.provider_clients import gateway_for
from services.webhooks.backfill import BACKFILL_PAGES_PER_RUN, backfill_cursor_key, backfill_from
from tests.factories import make_customer, make_order, make_payment
from tests.helpers import charge_payment, got, payment, reconcile_payment
from tests.providers.stripe.support import POLICY, charge_request, client, sent_now

AUTH = {"Authorization": "Bearer sk_test_sandbox"}


def test_every_call_carries_the_pinned_stripe_version(sandbox: Any) -> None:
    stripe = client(sandbox)
    request = charge_request()
    assert isinstance(stripe.charge(request), Succeeded)
    stripe.lookup(sent_now(request, timedelta(hours=25)))  # search, then the list
    stripe.undelivered_events()
    logged = sandbox.requests_log(dialect="stripe")
    assert {r["endpoint"] for r in logged} == {"create", "search", "list", "events"}
    assert {r["api_version"] for r in logged} == {API_VERSION}
    other = StripeProvider(sandbox.url, "sk_test_sandbox", POLICY, api_version="2025-01-27.acacia")
    other.charge(charge_request())
    assert sandbox.requests_log(dialect="stripe")[-1]["api_version"] == "2025-01-27.acacia"


def test_the_sandbox_refuses_confirm_without_return_url_like_a_recent_account(
    sandbox: Any,
) -> None:
    form = {"amount": "500", "currency": "eur", "confirm": "true", "payment_method": "pm_card_visa"}
    refused = requests.post(f"{sandbox.url}/v1/payment_intents", data=form, headers=AUTH, timeout=5)
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "return_url"
    with_url = {**form, "return_url": "https://shop.example/back"}
    accepted = requests.post(
        f"{sandbox.url}/v1/payment_intents", data=with_url, headers=AUTH, timeout=5
    )
    assert accepted.status_code == 200 and accepted.json()["status"] == "succeeded"
    # Our client rules redirects out instead, so its charges are accepted.
    assert isinstance(client(sandbox).charge(charge_request()), Succeeded)


def _charged_but_unknown(app: Flask, sandbox: Any) -> int:
    """Charged at the provider, the answer lost: unknown, with no provider id known."""
    fault = sandbox.add_fault("commit_timeout", hold_s=2.5, dialect="stripe", endpoint="create")
    with app.app_context():
        created = make_payment(make_order(make_customer()))
        db.session.commit()
        payment_id = created.id
        charge_payment(payment_id)
    requests.delete(f"{sandbox.url}/_sandbox/faults/{fault}", timeout=5)
    assert payment(app, payment_id).status == PaymentStatus.UNKNOWN
    assert sandbox.succeeded_charges(str(payment_id)) == 1
    return payment_id


@pytest.mark.parametrize(
    "fault",
    [
        {"status": 400},
        {"status": 404, "html": True},  # a proxy's page, not Stripe's resource_missing
        {"status": 404},
        {"status": 500},
    ],
    ids=["400", "proxy-404", "404-not-resource-missing", "500"],
)
def test_a_search_error_never_fails_a_charged_payment(
    app: Flask, sandbox: Any, fault: dict[str, Any]
) -> None:
    payment_id = _charged_but_unknown(app, sandbox)
    # Minutes later (past the search lag): the replay fails (503 in front of Stripe), a
    # fresh answer of a request that may still be running there: the lookup ends at it.
    with time_machine.travel(utcnow() + timedelta(minutes=10), tick=True):
        replay_fault = sandbox.add_fault("error", status=503, dialect="stripe", endpoint="create")
        search_fault = sandbox.add_fault("error", dialect="stripe", endpoint="search", **fault)
        with app.app_context():
            reconcile_payment(payment_id)
        still = payment(app, payment_id)
        assert still.status == PaymentStatus.UNKNOWN, still.status  # never failed
        assert "503" in (still.last_error or "") and "replay" in (still.last_error or "")
        assert not sandbox.requests_log(endpoint="search")  # no read after that send
        # Read without a send (the provider's records only), search errors are unknown.
        request = charge_request(payment_id=payment_id, idempotency_key=str(still.idempotency_key))
        read = client(sandbox).lookup(sent_now(request, timedelta(minutes=10)))
        assert isinstance(read, Unknown) and str(fault["status"]) in read.reason, read
        assert sandbox.requests_log(endpoint="search")
        for fault_id in (replay_fault, search_fault):
            requests.delete(f"{sandbox.url}/_sandbox/faults/{fault_id}", timeout=5)
        with app.app_context():
            got(Payment, payment_id).lease_expires_at = None
            db.session.commit()
            reconcile_payment(payment_id)
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED


def test_a_retrieve_error_is_unknown_but_resource_missing_is_absent(sandbox: Any) -> None:
    stripe = client(sandbox)
    charged = stripe.charge(charge_request())
    assert isinstance(charged, Succeeded)
    sandbox.add_fault("error", status=404, html=True, dialect="stripe", endpoint="retrieve")
    outcome = stripe._retrieve(charged.provider_payment_id)
    assert isinstance(outcome, Unknown) and "404" in outcome.reason
    sandbox.clear_faults()
    assert isinstance(stripe._retrieve("pi_nobody"), Absent)  # Stripe's resource_missing
    assert isinstance(stripe._retrieve(charged.provider_payment_id), Succeeded)


def test_backfill_walks_every_page_of_undelivered_events(app: Flask, sandbox: Any) -> None:
    """250 undelivered events read 10 a page (Stripe's default size): a run reads at most
    BACKFILL_PAGES_PER_RUN pages and the next resumes where it stopped."""
    sandbox.add_fault("webhook_drop")
    stripe = StripeProvider(sandbox.url, "sk_test_sandbox", POLICY, events_page_size=10)
    with app.app_context():
        customer = make_customer()
        ids = []
        for _ in range(250):
            created = make_payment(make_order(customer))
            ids.append(created.id)
        db.session.commit()
    for payment_id in ids:
        request = charge_request(payment_id, amount_minor=1000, idempotency_key=str(uuid.uuid4()))
        assert isinstance(stripe.charge(request), Succeeded)
    runs = []
    with app.app_context():
        for _ in range(5):
            counts = backfill_from("stripe", stripe, gateway_for("stripe")) or {}
            runs.append(sum(counts.values()))
            if redis_client.client.get(backfill_cursor_key("stripe")) is None:
                break
        states = db.session.scalars(select(Payment.status).where(Payment.id.in_(ids))).all()
    assert runs[0] == BACKFILL_PAGES_PER_RUN * 10 < 250  # bounded per run
    assert sum(runs) == 250
    assert states == [PaymentStatus.SUCCEEDED] * 250
