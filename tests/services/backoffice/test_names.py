"""Payments named as people name them: id, amount, the customer's email, the card."""

from __future__ import annotations

from typing import Any

from flask import Flask

from extensions import db
from services.backoffice.names import customer_emails, payment_names
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
    pending = make_payment(make_order(make_customer("anna@example.com")), provider="acquirer")
    db.session.flush()
    assert payment_names([pending.id])[pending.id].text == (
        f"#{pending.id}, €10.00, anna@example.com, acquirer, no card yet"
    )
    assert customer_emails([]) == {} and payment_names([]) == {}
