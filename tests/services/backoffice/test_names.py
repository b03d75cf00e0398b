"""Payments named as people name them: id, amount, the customer's email, the card."""

from __future__ import annotations

from typing import Any

from flask import Flask

from extensions import db
from services.backoffice.names import answer_in_words, customer_emails, payment_names
from tests.factories import make_customer, make_order, make_payment
from tests.helpers import charged, committed_payment, payment


def test_a_charged_payment_is_named_by_its_card(app: Flask, sandbox: Any) -> None:
    paid = charged(app, committed_payment(app))
    with app.app_context():
        named = payment_names([paid, None, 999_999])
        assert list(named) == [paid]  # an id that names nothing is left out
        card = payment(app, paid)
        email = customer_emails([card.customer_id])[card.customer_id]
        assert named[paid].text == f"#{paid}, €10.00, {email}, Visa 4242"


def test_a_payment_not_charged_yet_says_so(app_ctx: Flask) -> None:
    pending = make_payment(make_order(make_customer("anna@example.com")), provider="braintree")
    db.session.flush()
    assert payment_names([pending.id])[pending.id].text == (
        f"#{pending.id}, €10.00, anna@example.com, braintree, no card yet"
    )
    assert customer_emails([]) == {} and payment_names([]) == {}


def test_a_providers_answer_in_words() -> None:
    said = {
        "read timeout: HTTPConnectionPool(host='x', port=1): Read timed out.": "a timeout",
        "connection broken after sending: reset by peer": "the connection broke",
        "provider error 503: overloaded": "a 5xx",
        "circuit open until 12:00": "not sent",
        "ConnectionError: Max retries exceeded (Connection refused)": "could not be reached",
        "card_declined: insufficient_funds": "a refusal",
        "malformed response: no payment_intent id": "do not trust",
        "something new": "another answer",
    }
    for raw, words in said.items():
        assert answer_in_words(raw).startswith(words) or words in answer_in_words(raw), raw
    assert answer_in_words(None) == "" and answer_in_words("") == ""
