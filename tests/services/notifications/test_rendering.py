"""Writing an outbox row's email: in the customer's language, amounts formatted there."""

from __future__ import annotations

from typing import Any

from flask import Flask

from extensions import db
from models import Customer, Payment
from services.payments.charging import charge_payment
from tests.helpers import committed_payment, run_notification_jobs


def test_a_customer_who_shops_in_italian_gets_italian_emails(
    app: Flask, sandbox: Any, mail_sink: Any
) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        customer = db.session.get(Customer, db.session.get(Payment, payment_id).customer_id)  # type: ignore[union-attr]
        assert customer is not None
        customer.locale = "it"
        db.session.commit()
        charge_payment(payment_id)
    run_notification_jobs(app)
    receipts = [m for m in mail_sink.messages() if str(payment_id) in m["Subject"]]
    assert [m["Subject"] for m in receipts] == [f"La tua ricevuta per il pagamento n. {payment_id}"]
    text = receipts[0].get_body(("plain",)).get_content()
    assert "10,00\xa0€" in text and "Pagato con Visa che termina con 4242." in text
