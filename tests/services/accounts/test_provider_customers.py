"""A Stripe Customer per shop customer, made once, before its first payment is sent: every
payment sent with it names it, so a lookup in a busy shop reads one short page of intents."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import requests
import stripe
import time_machine
from flask import Flask
from prometheus_client import REGISTRY
from sqlalchemy import select

from extensions import db
from models import Payment, PaymentStatus, ProviderCustomer
from models.types import utcnow
from providers.outcomes import Absent, Succeeded
from providers.stripe.client import SETTLE_S
from providers.stripe.lookups import LIST_MAX_PAGES
from services.accounts import provider_customers
from services.payments.kind import request_for
from tests.factories import make_customer, make_order, make_payment
from tests.helpers import charge_payment, committed_payment, payment, reconcile_payment
from tests.providers.stripe.support import charge_request, client


def _list_pages() -> float:
    return REGISTRY.get_sample_value("stripe_lookup_list_pages_total") or 0.0


def test_a_customer_is_made_before_its_first_payment_and_every_payment_names_it(
    app: Flask, sandbox: Any, sdk: stripe.StripeClient
) -> None:
    with app.app_context():
        customer = make_customer()
        first = make_payment(make_order(customer))
        db.session.commit()
        customer_id, first_id = customer.id, first.id
    with app.app_context():
        charge_payment(first_id)  # the customer is made first, then the payment sent
        made = db.session.scalars(select(ProviderCustomer)).one()
        assert made.customer_id == customer_id and made.provider == "stripe"
        made_id = made.provider_customer_id
        assert provider_customers.create(customer_id, "stripe") == made_id
        second = make_payment(make_order(db.session.get_one(type(customer), customer_id)))
        db.session.commit()
        second_id = second.id
    with app.app_context():
        charge_payment(second_id)
    for payment_id in (first_id, second_id):
        sent = payment(app, payment_id)
        assert sent.status == PaymentStatus.SUCCEEDED
        assert sent.provider_customer_id == made_id
        # Stripe's own SDK reads the intent: it belongs to that customer.
        intent = sdk.v1.payment_intents.retrieve(str(sent.provider_payment_id))
        assert intent.customer == made_id
    assert len(sandbox.requests_log(endpoint="customer")) == 1  # made once


def test_a_first_payment_is_sent_without_a_customer_stripe_cannot_make_now(
    app: Flask, sandbox: Any
) -> None:
    sandbox.add_fault("error", dialect="stripe", endpoint="customer", status=500, count=5)
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    sent = payment(app, payment_id)
    assert sent.status == PaymentStatus.SUCCEEDED and sent.provider_customer_id is None


def test_in_a_busy_shop_one_lookup_reads_one_page(app: Flask, sandbox: Any) -> None:
    sandbox.add_fault("search_lag", seconds=3600, dialect="stripe")  # only the list tells
    stripe_api = client(sandbox)
    made = stripe_api.create_customer(7)
    assert isinstance(made, str) and made.startswith("cus_")
    request = charge_request(payment_id=7, provider_customer_id=made)
    sent_at = datetime.now(UTC)
    assert isinstance(stripe_api.charge(request), Succeeded)  # the answer was lost, say
    never = charge_request(payment_id=8, provider_customer_id=made)  # never reached Stripe
    busy = requests.post(f"{sandbox.url}/_sandbox/stripe/busy", json={"count": 3000}, timeout=30)
    assert busy.status_code == 201
    with time_machine.travel(datetime.now(UTC) + timedelta(seconds=SETTLE_S + 5), tick=True):
        pages = _list_pages()
        found = stripe_api.lookup(dataclasses.replace(request, first_sent_at=sent_at))
        assert isinstance(found, Succeeded)
        assert _list_pages() == pages + 1  # one page, among 3,000 other intents
        absent = stripe_api.lookup(dataclasses.replace(never, first_sent_at=sent_at))
        assert isinstance(absent, Absent)
        assert _list_pages() == pages + 2
        # Without the customer: the window of everyone's intents, page after page.
        wide = stripe_api.lookup(
            dataclasses.replace(never, first_sent_at=sent_at, provider_customer_id=None)
        )
        assert _list_pages() == pages + 2 + LIST_MAX_PAGES  # 3,000 > 20 pages of 100
        assert not isinstance(wide, Absent)  # 20 pages are not all of them: not proven
    # One sent without a customer after the busy ones: on the list's first page (newest
    # first). The cap's 20 pages end without proving anything else, and never discard it.
    late = charge_request(payment_id=9)
    late_at = datetime.now(UTC)
    assert isinstance(stripe_api.charge(late), Succeeded)
    with time_machine.travel(datetime.now(UTC) + timedelta(seconds=SETTLE_S + 5), tick=True):
        found_late = stripe_api.lookup(dataclasses.replace(late, first_sent_at=late_at))
    assert isinstance(found_late, Succeeded), found_late


def test_a_lookup_of_a_payment_sent_with_its_customer_lists_only_its_intents(
    app: Flask, sandbox: Any
) -> None:
    with app.app_context():
        customer = make_customer()
        db.session.commit()
        customer_id = customer.id
        made = provider_customers.create(customer_id, "stripe")
        assert made is not None
        created = make_payment(make_order(db.session.get_one(type(customer), customer_id)))
        db.session.commit()
        payment_id = created.id
    fault = sandbox.add_fault("commit_timeout", hold_s=2.5, dialect="stripe", endpoint="create")
    with app.app_context():
        charge_payment(payment_id)
    requests.delete(f"{sandbox.url}/_sandbox/faults/{fault}", timeout=5)
    unknown = payment(app, payment_id)
    assert unknown.status == PaymentStatus.UNKNOWN and unknown.provider_customer_id == made
    with app.app_context():
        request = request_for(db.session.get_one(Payment, payment_id), utcnow())
    assert request.provider_customer_id == made  # a replay sends the same customer
    with time_machine.travel(utcnow() + timedelta(minutes=10), tick=True), app.app_context():
        reconcile_payment(payment_id)
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
