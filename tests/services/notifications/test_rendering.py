"""Writing an outbox row's email: in the customer's language, amounts formatted there."""

from __future__ import annotations

import email.policy
from email.message import EmailMessage
from typing import Any

from flask import Flask
from sqlalchemy import event, select

from extensions import db
from models import Customer, EmailKind, OutboxMessage, Payment, PaymentStatus, TransitionSource
from services.notifications.outbox import queue_email
from services.notifications.rendering import POLICY, render_all, render_email
from services.payments.state import move
from tests.factories import make_customer, make_order, make_payment, make_topup
from tests.helpers import charge_payment, committed_payment, run_notification_jobs


def test_a_customer_who_shops_in_italian_gets_italian_emails(
    app: Flask, sandbox: Any, mail_sink: Any
) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        customer = db.session.get(Customer, db.session.get(Payment, payment_id).customer_id)  # type: ignore[union-attr]  # the payment exists (made above)
        assert customer is not None
        customer.locale = "it"
        db.session.commit()
        charge_payment(payment_id)
    run_notification_jobs(app)
    receipts = [m for m in mail_sink.messages() if str(payment_id) in m["Subject"]]
    assert [m["Subject"] for m in receipts] == [f"La tua ricevuta per il pagamento n. {payment_id}"]
    text = receipts[0].get_body(("plain",)).get_content()
    assert "10,00\xa0€" in text and "Pagato con Visa che termina con 4242." in text


def _written(message: Any) -> tuple[Any, ...]:
    """A message without its MIME boundaries (random): headers, and each part's text."""
    headers = [(k, str(v)) for k, v in message.items() if k != "Content-Type"]
    return (headers, [part.get_content() for part in message.iter_parts()])


def test_a_batch_is_written_in_a_few_statements_as_each_row_alone(app: Flask) -> None:
    with app.app_context():
        for n in range(8):
            customer = make_customer()
            customer.locale = "it" if n % 2 else "en"
            payment = make_payment(make_order(customer, quantity=n + 1))
            move(
                payment,
                PaymentStatus.FAILED if n == 3 else PaymentStatus.SUCCEEDED,
                source=TransitionSource.CHARGE,
                reason=f"reason {n}",
            )
            queue_email(EmailKind.WELCOME, customer.id, customer_id=customer.id)
            if n == 5:  # to the admins, with the payment's last reason
                queue_email(EmailKind.REVIEW_ALERT, payment.id)
        topup = make_topup(make_customer(), 700)
        move(topup, PaymentStatus.SUCCEEDED, source=TransitionSource.CHARGE, reason="topped up")
        db.session.commit()
        rows = db.session.scalars(select(OutboxMessage).order_by(OutboxMessage.id)).all()
        assert {row.kind for row in rows} == {
            EmailKind.RECEIPT,
            EmailKind.PAYMENT_FAILED,
            EmailKind.WELCOME,
            EmailKind.REVIEW_ALERT,
        }
        db.session.expunge_all()  # as the claim gives them: outside the session
        statements: list[str] = []

        def count(*args: Any) -> None:
            statements.append(args[2])

        event.listen(db.engine, "before_cursor_execute", count)
        try:
            in_batch = render_all(rows)
        finally:
            event.remove(db.engine, "before_cursor_execute", count)
        # Each kind's subjects (payments, customers), orders, their lines, products, last
        # reasons, languages: one statement each, however many rows.
        assert len(statements) == 7, "\n".join(s[:90] for s in statements)
        for row in rows:
            db.session.expunge_all()
            alone = render_email(row)
            written = in_batch[row.id]
            assert not isinstance(written, Exception)
            assert _written(written) == _written(alone)
        italian = [m for m in in_batch.values() if "ricevuta" in str(m["Subject"])]  # type: ignore[index]  # an EmailMessage is indexed by header
        assert len(italian) == 3  # the receipts of the Italian customers (one failed)
        alert = next(m for m in in_batch.values() if "review" in str(m["Subject"]))  # type: ignore[index]  # an EmailMessage is indexed by header
        assert "reason 5" in _written(alert)[1][0]


def _built(policy: Any, to: str, **how: Any) -> bytes:
    message = EmailMessage(policy=policy)
    message["Subject"] = "La tua ricevuta per il pagamento n. 7 — 10,00 €"
    message["From"] = "Payments Monolith <shop@example.com>, Payments desk <desk@example.com>"
    message["To"] = to
    message["Message-ID"] = "<outbox-7.1@example.com>"
    message.set_content("Grazie. 10,00\xa0€\n")
    message.add_alternative("<p>Grazie. 10,00\xa0€</p>", subtype="html")
    message.set_boundary("fixed")
    return message.as_bytes(policy=message.policy.clone(**how))


def test_the_kept_headers_write_what_the_standard_policy_writes() -> None:
    for to in ("a@example.com", "Bea <b@example.com>", "a@example.com"):
        assert _built(POLICY, to) == _built(email.policy.default, to)
        # Written again another way (SMTP's line ends, a narrower fold): the kept
        # headers' folds are kept per way of writing, never one for another.
        for how in ({"linesep": "\r\n"}, {"max_line_length": 40}):
            assert _built(POLICY, to, **how) == _built(email.policy.default, to, **how)
    first = EmailMessage(policy=POLICY)
    second = EmailMessage(policy=POLICY)
    for message in (first, second):
        message["From"] = "shop@example.com"
        message["To"] = f"{id(message)}@example.com"
    assert first["From"] is second["From"]  # parsed once
    assert first["To"] is not second["To"] and first["To"] != second["To"]


def test_each_message_has_a_boundary_of_its_own(app: Flask) -> None:
    with app.app_context():
        for _ in range(2):
            customer = make_customer()
            payment = make_payment(make_order(customer))
            queue_email(EmailKind.RECEIPT, payment.id, customer_id=customer.id)
        db.session.commit()
        rows = list(db.session.scalars(select(OutboxMessage).order_by(OutboxMessage.id)))[-2:]
        boundaries = set()
        for row in rows:
            message = render_email(row)
            boundary = message.get_boundary()
            assert boundary is not None and boundary.startswith("=_")
            boundaries.add(boundary)
            parsed = email.message_from_bytes(message.as_bytes(), policy=email.policy.default)
            assert [part.get_content_type() for part in parsed.iter_parts()] == [
                "text/plain",
                "text/html",
            ]
        assert len(boundaries) == 2
