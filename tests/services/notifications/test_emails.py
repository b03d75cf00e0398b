"""Customer emails: written once per cause (even with jobs run twice), delivered at least
once with one Message-ID, kept and retried when the SMTP server hangs or refuses, and
the sink receives exactly what the outbox says was sent."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import time_machine
from flask import Flask
from redis import Redis
from rq import Queue
from rq.registry import ScheduledJobRegistry
from sqlalchemy import select

from extensions import db, redis_client
from models import EmailKind, OutboxMessage, OutboxStatus, ProviderCall
from models.types import utcnow
from services.accounts.customers import create_customer
from services.notifications import emails
from services.notifications.emails import send_batch, sweep_outbox
from services.notifications.rendering import message_id, render_email
from services.platform import queues
from tests.helpers import all_rows, charge_payment, committed_payment, run_notification_jobs
from tests.mail_support import busy_smtp_server, silent_smtp_server


def _rows(app: Flask) -> list[OutboxMessage]:
    return all_rows(app, OutboxMessage)


def _email_jobs(app: Flask) -> list[str]:
    return list(_queue(app).get_job_ids())


def _scheduled_emails(app: Flask) -> list[str]:
    return list(ScheduledJobRegistry(queue=_queue(app)).get_job_ids())


def _queue(app: Flask) -> Queue:
    redis = Redis.from_url(app.config["REDIS_URL"])
    return Queue(app.config["NOTIFICATIONS_QUEUE"], connection=redis)


def _one(app: Flask, kind: EmailKind) -> OutboxMessage:
    [row] = [r for r in _rows(app) if r.kind == kind]
    return row


def test_a_receipt_is_written_once_and_sent_once(app: Flask, sandbox: Any, mail_sink: Any) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
        charge_payment(payment_id)  # the job again: nothing new
    receipt = _one(app, EmailKind.RECEIPT)
    assert receipt.subject_id == payment_id and receipt.status == OutboxStatus.PENDING
    [job] = _email_jobs(app)  # the sender's doorbell: one job for whatever waits
    assert job.startswith("bell-emails-")
    run_notification_jobs(app)
    with app.app_context():
        send_batch(receipt.id)  # a second run of the job: already sent, nothing happens
    [message] = mail_sink.messages()
    assert message["Subject"] == f"Your receipt for payment #{payment_id}"
    assert message["To"] == receipt.recipient
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    assert "€10.00" in text and "Paid with Visa ending in 4242." in text  # as Stripe said
    assert "Paid with Visa ending in 4242." in html and "1 x Thing: €10.00" in text
    assert app.config["SHOP_NAME"] in text and "00100 Roma, Italia" in html
    assert message["Date"]  # and a Message-ID below: what mail clients need
    sent = _one(app, EmailKind.RECEIPT)
    assert sent.status == OutboxStatus.SENT and sent.attempts == 1
    with app.app_context():
        assert message["Message-ID"] == message_id(sent)


def test_a_hanging_smtp_server_keeps_the_email_and_retries(
    app: Flask, make_app: Any, mail_sink: Any
) -> None:
    with app.app_context():
        create_customer("new@example.com", "password123", ["EUR"])
    welcome = _one(app, EmailKind.WELCOME)
    with silent_smtp_server() as url:
        hanging = make_app(SMTP_URL=url, SMTP_TIMEOUT_S=0.5)
        with hanging.app_context():
            send_batch(welcome.id)
    kept = _one(app, EmailKind.WELCOME)
    assert kept.status == OutboxStatus.PENDING and kept.attempts == 1
    assert kept.next_attempt_at is not None and kept.last_error
    assert _scheduled_emails(app) == [f"email-{welcome.id}-retry-1"]
    with time_machine.travel(utcnow() + timedelta(minutes=5)), app.app_context():
        send_batch(welcome.id)  # the retry, with the sink back
    assert _one(app, EmailKind.WELCOME).status == OutboxStatus.SENT
    assert [m["To"] for m in mail_sink.messages()] == ["new@example.com"]


def test_the_same_message_id_on_every_attempt(app: Flask, make_app: Any, mail_sink: Any) -> None:
    with app.app_context():
        create_customer("again@example.com", "password123", ["EUR"])
    row = _one(app, EmailKind.WELCOME)
    with busy_smtp_server() as url:
        busy = make_app(SMTP_URL=url)
        with busy.app_context():
            send_batch(row.id)
            first = render_email(db.session.get(OutboxMessage, row.id))  # type: ignore[arg-type]  # the row exists (made above)
    assert "451" in (_one(app, EmailKind.WELCOME).last_error or "")
    with time_machine.travel(utcnow() + timedelta(minutes=5)), app.app_context():
        send_batch(row.id)
    [delivered] = mail_sink.messages()
    assert delivered["Message-ID"] == first["Message-ID"]


def test_a_refusing_server_ends_failed_with_the_reason(app: Flask, make_app: Any) -> None:
    from devtools.servers import free_port

    with app.app_context():
        create_customer("late@example.com", "password123", ["EUR"])
    row = _one(app, EmailKind.WELCOME)
    nobody = make_app(SMTP_URL=f"smtp://127.0.0.1:{free_port()}")
    # Retried for the whole horizon (a day at least), then failed with the reason.
    for hours in (0, 1, 30, 80):
        with time_machine.travel(utcnow() + timedelta(hours=hours)), nobody.app_context():
            send_batch(row.id)
        if hours < 80:
            assert _one(app, EmailKind.WELCOME).status == OutboxStatus.PENDING, hours
    failed = _one(app, EmailKind.WELCOME)
    assert failed.status == OutboxStatus.FAILED and failed.attempts == 4
    assert "after 4 attempts: could not connect" in (failed.last_error or "")


def test_the_sweep_sends_what_lost_its_job(app: Flask, mail_sink: Any) -> None:
    with app.app_context():
        create_customer("lost@example.com", "password123", ["EUR"])
    Redis.from_url(app.config["REDIS_URL"]).flushdb()  # the job is gone
    with time_machine.travel(utcnow() + timedelta(minutes=2)), app.app_context():
        assert sweep_outbox() == 1
    run_notification_jobs(app)
    assert [m["To"] for m in mail_sink.messages()] == ["lost@example.com"]


def test_the_sink_received_what_the_outbox_says_was_sent(
    app: Flask, sandbox: Any, mail_sink: Any
) -> None:
    for method in ("pm_card_visa", "pm_card_chargeDeclined"):
        payment_id = committed_payment(app, payment_method=method)
        with app.app_context():
            charge_payment(payment_id)
    run_notification_jobs(app)
    with app.app_context():
        sent = [message_id(r) for r in db.session.scalars(select(OutboxMessage))]
    assert sorted(m["Message-ID"] for m in mail_sink.messages()) == sorted(sent)
    failed = next(m for m in mail_sink.messages() if "did not go through" in m["Subject"])
    assert "/checkout" in failed.get_body(("plain",)).get_content()  # pay again


def test_each_cause_writes_its_email(app: Flask, sandbox: Any, mail_sink: Any) -> None:
    """A review alert to the admins, a refund notice, a wallet receipt: with their cause."""
    import uuid

    from services.payments.wallet_orders import pay_order_from_wallet
    from services.refunds.issue import refund_payment
    from services.wallet import ledger
    from tests.factories import make_customer, make_order, make_wallet
    from tests.helpers import send_refund

    sandbox.add_fault("tamper", field="amount", value=1, dialect="stripe", endpoint="create")
    tampered = committed_payment(app)
    with app.app_context():
        charge_payment(tampered)  # the answer does not match: needs_review
    sandbox.clear_faults()
    paid = committed_payment(app)
    with app.app_context():
        charge_payment(paid)
        refund, _ = refund_payment(paid, 100, "goodwill", "ops", uuid.uuid4())
        send_refund(refund.id)
        customer = make_customer()
        order = make_order(customer)
        ledger.credit(make_wallet(customer), 5000, "fund")
        db.session.commit()
        pay_order_from_wallet(customer, order.id, str(uuid.uuid4()))
        refund_id, order_id = refund.id, order.id
    kinds = {(r.kind, r.subject_id): r.recipient for r in _rows(app)}
    assert kinds[(EmailKind.REVIEW_ALERT, tampered)] == app.config["ADMIN_ALERT_EMAIL"]
    assert (EmailKind.RECEIPT, tampered) not in kinds  # no receipt for what is in review
    assert (EmailKind.REFUND, refund_id) in kinds
    assert (EmailKind.WALLET_RECEIPT, order_id) in kinds
    run_notification_jobs(app)
    subjects = {m["Subject"] for m in mail_sink.messages()}
    assert f"Payment #{tampered} needs review" in subjects
    assert f"Your refund #{refund_id}" in subjects


def test_a_message_that_cannot_be_written_fails_at_once_with_the_reason(
    app: Flask, admin_client: Any
) -> None:
    """The reported hole: a recipient with CR/LF made a row that never sent, never failed,
    made its dashboard page a 500 and delayed genuine mail."""
    with app.app_context():
        customer = create_customer("crlf@example.com", "password123", ["EUR"])
        row = db.session.scalars(select(OutboxMessage)).one()
        row.recipient = "crlf@example.com\r\nBcc: victim@corp.example"  # as an old row could be
        db.session.commit()
        send_batch(row.id)
        failed = db.session.get(OutboxMessage, row.id)
        assert failed is not None and failed.status == OutboxStatus.FAILED
        assert failed.last_error and failed.last_error.startswith("cannot be written")
        assert customer.id
    page = admin_client.get(f"/admin/outbox/message/{row.id}")
    assert page.status_code == 200 and "cannot be written" in page.get_data(as_text=True)


def test_the_open_breaker_counts_no_attempt_and_a_failed_email_can_be_sent_again(
    app: Flask, admin_client: Any, mail_sink: Any
) -> None:
    from services.platform.provider_clients import breaker_for
    from tests.helpers import csrf_token_from

    with app.app_context():
        create_customer("again@example.com", "password123", ["EUR"])
        breaker_for("smtp").force("open", actor="test", reason="SMTP outage")
    row = _one(app, EmailKind.WELCOME)
    for minutes in (0, 20, 60):
        with time_machine.travel(utcnow() + timedelta(minutes=minutes)), app.app_context():
            send_batch(row.id)
    waiting = _one(app, EmailKind.WELCOME)
    assert waiting.status == OutboxStatus.PENDING and waiting.attempts == 0  # none counted
    assert "circuit open" in (waiting.last_error or "")
    with app.app_context():
        breaker_for("smtp").force("reset", actor="test", reason="SMTP is back")
        found = db.session.get(OutboxMessage, row.id)
        assert found is not None
        found.status, found.last_error = OutboxStatus.FAILED, "given up earlier"
        db.session.commit()
    page = admin_client.get(f"/admin/outbox/message/{row.id}").get_data(as_text=True)
    assert "Send again" in page
    sent = admin_client.post(
        f"/admin/outbox/resend/{row.id}",
        data={"csrf_token": csrf_token_from(page)},
        follow_redirects=True,
    )
    assert "queued to be sent again" in sent.get_data(as_text=True)
    run_notification_jobs(app)
    assert [m["To"] for m in mail_sink.messages()] == ["again@example.com"]
    assert _one(app, EmailKind.WELCOME).status == OutboxStatus.SENT


def test_one_waiting_job_sends_every_email_in_batches(
    app: Flask, mail_sink: Any, monkeypatch: Any
) -> None:
    _welcomes(app, "batch", 5)
    assert len(_rows(app)) == 5
    assert len(_email_jobs(app)) == 1  # the first rang; the other four found it rung
    monkeypatch.setattr(emails, "EMAIL_BATCH", 2)
    with app.app_context():
        assert emails.send_waiting() == 5  # three claims: 2, 2 and 1
    assert {r.status for r in _rows(app)} == {OutboxStatus.SENT}
    assert len(mail_sink.messages()) == 5
    # The full claims rang for help; the jobs that came find nothing, and answer.
    run_notification_jobs(app)
    assert _email_jobs(app) == []
    with app.app_context():
        assert redis_client.client.get(queues.EMAILS_BELL) is None
        create_customer("after@example.com", "password123", ["EUR"])
    assert len(_email_jobs(app)) == 1  # a row after the answer rings again


def test_a_rows_own_job_sends_the_emails_waiting_after_it(
    app: Flask, mail_sink: Any, monkeypatch: Any
) -> None:
    _welcomes(app, "own", 5)
    rows = sorted(r.id for r in _rows(app))
    monkeypatch.setattr(emails, "EMAIL_BATCH", 3)
    with app.app_context():
        assert emails.send_batch(rows[1]) == 3  # its own and the next two, no more
    assert [r.status for r in sorted(_rows(app), key=lambda r: r.id)] == [
        OutboxStatus.PENDING,
        *[OutboxStatus.SENT] * 3,
        OutboxStatus.PENDING,
    ]


def test_a_failed_send_leaves_the_rest_to_a_job_of_their_own(app: Flask, mail_sink: Any) -> None:
    _welcomes(app, "held", 3)
    first = min(r.id for r in _rows(app))
    with app.app_context():
        db.session.get_one(OutboxMessage, first).recipient = "bad\nrecipient@example.com"
        db.session.commit()
        assert emails.send_waiting() == 0  # the first cannot be written: it stops there
    assert _one_by_id(app, first).status == OutboxStatus.FAILED
    # The other two were released uncounted, and the doorbell rung for them.
    assert [(r.status, r.attempts) for r in _rows(app) if r.id != first] == [
        (OutboxStatus.PENDING, 0)
    ] * 2
    run_notification_jobs(app)
    assert [r.status for r in _rows(app) if r.id != first] == [OutboxStatus.SENT] * 2


def _welcomes(app: Flask, prefix: str, count: int) -> None:
    """`count` new customers, so `count` welcome emails waiting."""
    with app.app_context():
        for n in range(count):
            create_customer(f"{prefix}{n}@example.com", "password123", ["EUR"])


def _one_by_id(app: Flask, outbox_id: int) -> OutboxMessage:
    [row] = [r for r in _rows(app) if r.id == outbox_id]
    return row


def test_a_batch_claims_together_and_releases_what_it_did_not_try(
    app: Flask, mail_sink: Any, monkeypatch: Any
) -> None:
    _welcomes(app, "budget", 3)
    rows = sorted(r.id for r in _rows(app))
    monkeypatch.setattr(emails, "BATCH_BUDGET_S", 0.0)  # spent after the first send
    with app.app_context():
        assert emails.send_batch(rows[0]) == 1
        calls = db.session.scalars(
            select(ProviderCall).where(ProviderCall.operation == "email")
        ).all()
    by_id = {r.id: r for r in _rows(app)}
    assert by_id[rows[0]].status == OutboxStatus.SENT and by_id[rows[0]].attempts == 1
    # Claimed with the batch, never tried: as they were, their jobs still queued.
    assert [(by_id[i].status, by_id[i].attempts, by_id[i].lease_expires_at) for i in rows[1:]] == [
        (OutboxStatus.PENDING, 0, None)
    ] * 2
    assert len(_email_jobs(app)) == 1  # the doorbell's, untouched by a row's own job
    # The sent one's call is in the call log, written with its row.
    with app.app_context():
        expected = [("Succeeded", message_id(by_id[rows[0]]))]
    assert [(c.outcome, c.idempotency_key) for c in calls] == expected
    assert len(mail_sink.messages()) == 1


def test_a_job_whose_row_is_sent_claims_nothing(app: Flask, mail_sink: Any) -> None:
    _welcomes(app, "late", 1)
    [first] = [r.id for r in _rows(app)]
    with app.app_context():
        assert send_batch(first) == 1
    _welcomes(app, "later", 1)
    [second] = [r.id for r in _rows(app) if r.id != first]
    with app.app_context():
        assert emails.send_batch(first) == 0  # a job left behind: its row is sent
    left = {r.id: r for r in _rows(app)}[second]
    assert (left.status, left.attempts, left.lease_expires_at) == (OutboxStatus.PENDING, 0, None)
    assert len(mail_sink.messages()) == 1


def test_a_full_claim_rings_for_another_worker(app: Flask, monkeypatch: Any) -> None:
    _welcomes(app, "help", 3)
    assert len(_email_jobs(app)) == 1
    monkeypatch.setattr(emails, "EMAIL_BATCH", 2)
    monkeypatch.setattr(
        emails, "_attempt", lambda row, message: True
    )  # the claim is what is tested
    with app.app_context():
        queues.answer(queues.EMAILS_BELL)  # what the job does first
        emails._send_claimed(None, 0.0)
    assert len(_email_jobs(app)) == 2  # a second job, for a second worker meanwhile
