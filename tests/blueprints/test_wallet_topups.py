"""The wallet's top-up pages: a typed amount reviewed, then charged once through the
provider; bad amounts, a tampered review, the Italian way of typing euros, any currency
in the address, and a customer blocked for card testing."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from extensions import db
from models import Customer, LedgerEntry, Payment, PaymentPurpose, Wallet
from models.types import utcnow
from tests.helpers import csrf_token_from, rows, run_jobs


def test_topup_through_the_provider_credits_once(
    shopper: FlaskClient, app: Flask, sandbox: Any
) -> None:
    page = shopper.get("/wallet/topup?currency=EUR").get_data(as_text=True)
    typed = {"csrf_token": csrf_token_from(page), "currency": "EUR", "amount": "12.50"}
    review = shopper.post("/wallet/topup", data=typed)
    assert review.status_code == 200
    shown = review.get_data(as_text=True)
    assert "You will be charged €12.50." in shown and 'name="amount_minor" value="1250"' in shown
    with app.app_context():  # nothing moves on a typed amount before its review
        assert db.session.scalar(select(func.count()).select_from(Payment)) == 0
    key = re.search(r'name="idempotency_key" value="([^"]+)"', shown)
    assert key
    form = {
        "csrf_token": csrf_token_from(shown),
        "idempotency_key": key.group(1),
        "currency": "EUR",
        "amount_minor": "1250",
        "payment_method": "pm_card_visa",
    }
    first = shopper.post("/wallet/topup", data=form)
    second = shopper.post("/wallet/topup", data=form)
    assert first.headers["Location"] == second.headers["Location"]
    run_jobs(app)
    with app.app_context():
        topup = db.session.scalar(select(Payment))
        assert topup is not None and topup.purpose == PaymentPurpose.WALLET_TOPUP
        assert topup.amount_minor == 1250
        assert (
            db.session.scalar(select(Wallet.balance_minor).where(Wallet.currency == "EUR")) == 1250
        )
    assert rows(app, LedgerEntry) == 1
    assert "wallet has been credited" in shopper.get(first.headers["Location"]).get_data(
        as_text=True
    )
    assert sandbox.succeeded_charges(str(topup.id)) == 1


@pytest.mark.parametrize(
    "amount", ["", "abc", "-5", "0", "12.345", "99999999", "NaN", "1e3x", "0.49"]
)
def test_bad_topup_amounts_write_nothing(shopper: FlaskClient, app: Flask, amount: str) -> None:
    page = shopper.get("/wallet/topup").get_data(as_text=True)
    form = {
        "csrf_token": csrf_token_from(page),
        "idempotency_key": str(uuid.uuid4()),
        "currency": "EUR",
        "amount": amount,
        "payment_method": "pm_card_visa",
    }
    response = shopper.post("/wallet/topup", data=form)
    assert response.status_code in (400, 422)
    assert "Top up your wallet" in response.get_data(as_text=True)
    if amount == "0.49":  # under Stripe's minimum: said before the review, with the minimum
        assert "Card payments start at" in response.get_data(as_text=True)
    assert b"data-review" not in response.data
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Payment)) == 0


@pytest.mark.parametrize("amount_minor", ["", "12.50", "-5", "1e3", "9" * 16, "99999999"])
def test_a_tampered_review_writes_nothing(
    shopper: FlaskClient, app: Flask, amount_minor: str
) -> None:
    page = shopper.get("/wallet/topup").get_data(as_text=True)
    form = {
        "csrf_token": csrf_token_from(page),
        "idempotency_key": str(uuid.uuid4()),
        "currency": "EUR",
        "amount_minor": amount_minor,
        "payment_method": "pm_card_visa",
    }
    response = shopper.post("/wallet/topup", data=form)
    assert 400 <= response.status_code < 500
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Payment)) == 0


def test_an_italian_customer_types_euros_the_italian_way(shopper: FlaskClient) -> None:
    page = shopper.get("/wallet/topup").get_data(as_text=True)
    italian = {"Accept-Language": "it-IT,it;q=0.9,en;q=0.5"}
    form = {"csrf_token": csrf_token_from(page), "currency": "EUR", "amount": "5,00"}
    review = shopper.post("/wallet/topup", data=form, headers=italian)
    assert 'name="amount_minor" value="500"' in review.get_data(as_text=True)  # not 500.00
    english = shopper.post("/wallet/topup", data=form)
    assert english.status_code == 400
    assert "did you mean €5.00?" in english.get_data(as_text=True)


@pytest.mark.parametrize("currency", ["abc", "XYZ", "0", "", "eur"])
def test_the_topup_form_with_any_currency_in_its_address_answers(
    shopper: FlaskClient, currency: str
) -> None:
    page = shopper.get("/wallet/topup", query_string={"currency": currency})
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and "<option selected>EUR</option>" in html


def test_a_customer_blocked_for_card_testing_reads_why_and_when_at_the_topup(
    shopper: FlaskClient, app: Flask, sandbox: Any
) -> None:
    with app.app_context():
        customer = db.session.scalars(
            select(Customer).where(Customer.email == "shopper@example.com")
        ).one()
        customer.payments_blocked_until = utcnow() + timedelta(minutes=5)
        db.session.commit()
    page = shopper.get("/wallet/topup?currency=EUR").get_data(as_text=True)
    form = {
        "csrf_token": csrf_token_from(page),
        "idempotency_key": str(uuid.uuid4()),
        "currency": "EUR",
        "amount_minor": "1250",
        "payment_method": "pm_card_visa",
    }
    refused = shopper.post("/wallet/topup", data=form)
    assert refused.status_code == 429 and 0 < int(refused.headers["Retry-After"]) <= 301
    assert "Too many card payments were declined" in refused.get_data(as_text=True)
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Payment)) == 0
