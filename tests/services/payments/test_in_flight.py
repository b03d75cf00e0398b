"""Card testing under concurrency: thirty attempts of one customer with a declining card,
sent at once by thirty threads, each its own connection, and those held back sent again
until every one is answered. Counted where the money is, at the provider: no more are
sent than the limits allow (once Braintree got all 30 and Stripe 9, because each attempt
found no decline counted yet)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from extensions import db
from models import Payment, PaymentStatus
from services.movements import engine
from services.payments.answers import CARD_REFUSED
from services.payments.kind import CHARGE
from tests.factories import make_customer, make_order, make_payment

DECLINING = {
    "stripe": ("pm_card_chargeDeclined", "create"),
    "braintree": ("fake-processor-declined-visa-nonce", "sale"),
}


def _sent_at_once(app: Flask, payment_ids: list[int]) -> None:
    start = threading.Barrier(len(payment_ids))

    def send(payment_id: int) -> None:
        with app.app_context():
            start.wait()
            try:
                engine.send(CHARGE, payment_id)
            finally:
                db.session.remove()

    threads = [threading.Thread(target=send, args=(p,)) for p in payment_ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)


@pytest.mark.parametrize("provider", ["stripe", "braintree"])
def test_thirty_declining_attempts_at_once_send_no_more_than_the_limit(
    app: Flask, sandbox: Any, provider: str
) -> None:
    card, endpoint = DECLINING[provider]
    with app.app_context():
        customer = make_customer()
        payments = [make_payment(make_order(customer), provider) for _ in range(30)]
        for each in payments:
            each.payment_method = card
        db.session.commit()
        payment_ids = [p.id for p in payments]
    waiting = payment_ids
    for _ in range(10):  # those held back while others were in flight: their jobs again
        _sent_at_once(app, waiting)
        with app.app_context():
            waiting = list(
                db.session.scalars(
                    select(Payment.id).where(
                        Payment.id.in_(payment_ids), Payment.status == PaymentStatus.PENDING
                    )
                )
            )
        if not waiting:
            break
    sent = len(sandbox.requests_log(dialect=provider, endpoint=endpoint))
    config = app.config
    # Stripe names the card before it is sent: its limit per card; Braintree names it only
    # in its answer: the customer's.
    limit = config[
        "CARD_TESTING_MAX_DECLINES_PER_CARD"
        if provider == "stripe"
        else "CARD_TESTING_MAX_DECLINES_PER_CUSTOMER"
    ]
    assert 1 <= sent <= limit
    with app.app_context():
        found = db.session.scalars(select(Payment).where(Payment.id.in_(payment_ids))).all()
    assert {p.status for p in found} == {PaymentStatus.FAILED}  # each answered, none waits
    refused = [p for p in found if p.decline_code == CARD_REFUSED]
    assert len(refused) == 30 - sent
