"""Writing an outbox row's email: plain text and HTML from templates/email/, in the
recipient customer's language (an admin's alert in English), with amounts formatted
there, and the Message-ID every attempt of the row carries. The dashboard shows a
message as the SMTP server gets it (`rendered_message`)."""

from __future__ import annotations

from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr

from flask import render_template
from flask_babel import force_locale, gettext
from sqlalchemy import select

from extensions import db
from models import (
    Alert,
    Customer,
    Dispute,
    DisputeTransition,
    EmailKind,
    Order,
    OutboxMessage,
    Payment,
    PaymentTransition,
    Refund,
    RefundTransition,
)
from models.money import DEFAULT_LOCALE, N_
from settings import settings

SUBJECTS = {
    EmailKind.WELCOME: N_("Welcome to Payments Monolith"),
    EmailKind.RECEIPT: N_("Your receipt for payment #%(id)s"),
    EmailKind.WALLET_RECEIPT: N_("Your receipt for order #%(id)s"),
    EmailKind.PAYMENT_FAILED: N_("Your payment #%(id)s did not go through"),
    EmailKind.REFUND: N_("Your refund #%(id)s"),
    EmailKind.REVIEW_ALERT: N_("Payment #%(id)s needs review"),
    EmailKind.REFUND_ALERT: N_("Refund #%(id)s needs attention"),
    EmailKind.DISPUTE_ALERT: N_("Dispute #%(id)s: a chargeback or inquiry"),
    EmailKind.OPS_ALERT: N_("Payments alert #%(id)s"),
}


def message_id(row: OutboxMessage) -> str:
    """The same on every attempt of the row (and different for every row)."""
    domain = parseaddr(settings().email.mail_from)[1].rpartition("@")[2] or "localhost"
    return f"<outbox-{row.id}.{int(row.created_at.timestamp())}@{domain}>"


def render_email(row: OutboxMessage) -> EmailMessage:
    """The message of an outbox row: plain text and HTML from templates/email/."""
    context = {"public_url": settings().payments.public_url, **_subject_of(row)}
    message = EmailMessage()
    # In the customer's language (the admins' alerts in English), amounts formatted there.
    with force_locale(_locale_of(row)):
        message["Subject"] = gettext(SUBJECTS[row.kind], id=row.subject_id)
        message["From"] = settings().email.mail_from
        message["To"] = row.recipient
        message["Date"] = format_datetime(row.created_at)
        message["Message-ID"] = message_id(row)
        message.set_content(render_template(f"email/{row.kind.value}.txt", **context))
        message.add_alternative(
            render_template(f"email/{row.kind.value}.html", subject=message["Subject"], **context),
            subtype="html",
        )
    return message


def _locale_of(row: OutboxMessage) -> str:
    """The language of the customer the email goes to (an admin's alert: English)."""
    locale = db.session.scalar(select(Customer.locale).where(Customer.email == row.recipient))
    return locale or DEFAULT_LOCALE


@dataclass
class ShownMessage:
    row: OutboxMessage
    headers: list[tuple[str, str]]
    text: str
    html: str


def rendered_message(outbox_id: int) -> ShownMessage | None:
    """An outbox row's message as the SMTP server gets it, for the dashboard."""
    row = db.session.get(OutboxMessage, outbox_id)
    if row is None:
        return None
    try:
        message = render_email(row)
    except (ValueError, TypeError, LookupError) as exc:
        return ShownMessage(row, [], f"This message cannot be written: {exc}", "")
    text, html = (part.get_content() for part in message.iter_parts())
    return ShownMessage(row, [(k, str(v)) for k, v in message.items()], text, html)


def _subject_of(row: OutboxMessage) -> dict[str, object]:
    get = db.session.get
    if row.kind == EmailKind.WELCOME:
        return {"customer": get(Customer, row.subject_id)}
    if row.kind == EmailKind.WALLET_RECEIPT:
        return {"order": get(Order, row.subject_id)}
    if row.kind == EmailKind.REFUND:
        return {"refund": get(Refund, row.subject_id)}
    if row.kind == EmailKind.REFUND_ALERT:
        why = db.session.scalar(
            select(RefundTransition.reason)
            .where(RefundTransition.refund_id == row.subject_id)
            .order_by(RefundTransition.id.desc())
            .limit(1)
        )
        return {"refund": get(Refund, row.subject_id), "reason": why or ""}
    if row.kind == EmailKind.OPS_ALERT:
        return {"alert": get(Alert, row.subject_id)}
    if row.kind == EmailKind.DISPUTE_ALERT:
        said = db.session.scalars(
            select(DisputeTransition.reason)
            .where(DisputeTransition.dispute_id == row.subject_id)
            .order_by(DisputeTransition.id)
        ).all()
        return {"dispute": get(Dispute, row.subject_id), "reason": "; ".join(said)}
    reason = db.session.scalar(
        select(PaymentTransition.reason)
        .where(PaymentTransition.payment_id == row.subject_id)
        .order_by(PaymentTransition.id.desc())
        .limit(1)
    )
    payment = get(Payment, row.subject_id)
    order = get(Order, payment.order_id) if payment is not None and payment.order_id else None
    return {"payment": payment, "order": order, "reason": reason or ""}
