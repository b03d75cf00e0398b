"""Braintree answered unkindly, through a fault proxy (tests/fault_proxy.py) in front of the
sandbox: a sale made, then a balancer's 503, 429 or 502 in place of its answer. Braintree
keeps no idempotency keys, so the only protection against a second sale is the search
before any repeat: counted here from the provider's ledger, not from our tables."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask

from extensions import db
from models import Payment, PaymentStatus
from services.movements import engine
from services.payments.kind import CHARGE
from tests.factories import make_customer, make_order, make_payment
from tests.fault_proxy import AFTER, FaultProxy, fault_proxy
from tests.helpers import got

SALE = r"/transactions$"
SEARCH = r"/transactions/advanced_search_ids$"


@pytest.fixture
def proxied(app: Flask, make_app: Any, sandbox: Any) -> Iterator[tuple[Flask, FaultProxy]]:
    """An app whose Braintree client talks to the sandbox through a fault proxy."""
    with fault_proxy(sandbox.url) as proxy:
        yield make_app(BRAINTREE_API_BASE=proxy.url), proxy


def _payment(app: Flask, amount_minor: int) -> tuple[int, str]:
    with app.app_context():
        payment = make_payment(make_order(make_customer(), price_minor=amount_minor), "braintree")
        db.session.commit()
        return payment.id, str(payment.idempotency_key)


@pytest.mark.parametrize("status", [503, 429, 502])
def test_a_sale_made_then_answered_badly_is_searched_never_repeated(
    proxied: tuple[Flask, FaultProxy], sandbox: Any, status: int
) -> None:
    app, proxy = proxied
    payment_id, key = _payment(app, 2100 + status)
    proxy.add(AFTER, SALE, method="POST", status=status, body=b"<html>busy</html>")
    with app.app_context():
        engine.send(CHARGE, payment_id)
        assert got_status(payment_id) == PaymentStatus.UNKNOWN  # never "not sent"
        # Past Braintree's duplicate window (which hides a repeat for 30 s) and with its
        # settlement an hour away: every job that could run again runs again.
        sandbox.age_braintree(40)
        engine.send(CHARGE, payment_id)  # a deferred send's job: nothing pending to send
        engine.look_up(CHARGE, payment_id)  # the search finds the sale
        assert got_status(payment_id) == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(key) == 1
    assert proxy.count("POST", SALE) == 1
    assert proxy.count("POST", SEARCH) >= 1


def test_a_sale_the_search_cannot_find_is_never_sent_again(
    proxied: tuple[Flask, FaultProxy], sandbox: Any
) -> None:
    """The search's index lags (an hour here): not found proves nothing, so the payment
    stays unknown, and every lookup searches, none sends."""
    app, proxy = proxied
    payment_id, key = _payment(app, 2300)
    proxy.add(AFTER, SALE, method="POST", status=503)
    sandbox.add_fault("search_lag", dialect="braintree", seconds=3600)
    with app.app_context():
        engine.send(CHARGE, payment_id)
        sandbox.age_braintree(40)
        for _ in range(3):
            engine.look_up(CHARGE, payment_id)
        assert got_status(payment_id) == PaymentStatus.UNKNOWN
    assert proxy.count("POST", SALE) == 1 and sandbox.succeeded_charges(key) == 1
    assert proxy.count("POST", SEARCH) == 3


def got_status(payment_id: int) -> PaymentStatus:
    db.session.expire_all()
    return got(Payment, payment_id).status
