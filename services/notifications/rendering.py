"""Writing an outbox row's email: plain text and HTML from templates/email/, in the
recipient customer's language (an admin's alert in English), with amounts formatted
there, and the Message-ID every attempt of the row carries. The dashboard shows a
message as the SMTP server gets it (`rendered_message`)."""

from __future__ import annotations

import email.policy
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from email.headerregistry import BaseHeader, HeaderRegistry
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr
from typing import Any

from flask import render_template
from flask_babel import force_locale, gettext
from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.orm import selectinload

from extensions import db
from models import (
    OPEN_REFUND_STATUSES,
    Alert,
    Customer,
    Dispute,
    DisputeTransition,
    EmailKind,
    Order,
    OrderLine,
    OutboxMessage,
    Payment,
    PaymentTransition,
    Refund,
    RefundRequest,
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
    EmailKind.REFUND_FAILED: N_("Your refund #%(id)s did not go through"),
    EmailKind.REFUND_DECLINED: N_("Your refund request #%(id)s"),
    EmailKind.REVIEW_ALERT: N_("Payment #%(id)s needs review"),
    EmailKind.REFUND_ALERT: N_("Refund #%(id)s needs attention"),
    EmailKind.DISPUTE_ALERT: N_("Dispute #%(id)s: a chargeback or inquiry"),
    EmailKind.OPS_ALERT: N_("Payments alert #%(id)s"),
}


def message_id(row: OutboxMessage) -> str:
    """The same on every attempt of the row (and different for every row)."""
    domain = parseaddr(settings().email.mail_from)[1].rpartition("@")[2] or "localhost"
    return f"<outbox-{row.id}.{int(row.created_at.timestamp())}@{domain}>"


class _FoldedOnce:
    """A header that writes its folded lines once per way of writing them (a header is
    immutable, and a kept one goes into every message)."""

    def fold(self, *, policy: Any) -> str:
        folds: dict[tuple[object, ...], str] = self.__dict__.setdefault("_folds", {})
        how = (policy.linesep, policy.max_line_length, policy.utf8, policy.cte_type)
        if how not in folds:
            folds[how] = super().fold(policy=policy)  # type: ignore[misc]  # the email package's Header.fold is untyped
        return folds[how]


class _KeptHeaders(HeaderRegistry):
    """The standard header registry, which builds a new class for every header it makes
    and parses every value anew (half of a receipt's CPU went there): here each class
    is built once per name, and the headers every message repeats (From, MIME-Version,
    a part's Content-Type and Content-Transfer-Encoding) are parsed once per value and
    folded once per way of writing them (`_FoldedOnce`). Headers are immutable: a
    message that changes one gets a new one."""

    REPEATED = frozenset({"from", "mime-version", "content-type", "content-transfer-encoding"})
    MAX_KEPT = 64  # distinct repeated values (a handful in practice)

    def __init__(self) -> None:
        super().__init__()
        self._classes: dict[str, type[BaseHeader]] = {}
        self._parsed: dict[tuple[str, str], BaseHeader] = {}

    def __getitem__(self, name: str) -> type[BaseHeader]:
        key = name.lower()
        if key not in self._classes:
            made = super().__getitem__(key)
            if key in self.REPEATED:
                made = type(made.__name__, (_FoldedOnce, made), {})
            self._classes[key] = made
        return self._classes[key]

    def __call__(self, name: str, value: str) -> BaseHeader:
        key = (name.lower(), value)
        if key[0] not in self.REPEATED or "boundary=" in value:  # a multipart's is unique
            return super().__call__(name, value)
        if key not in self._parsed:
            header = super().__call__(name, value)
            if len(self._parsed) >= self.MAX_KEPT:
                return header
            self._parsed[key] = header
        return self._parsed[key]


POLICY = email.policy.default.clone(header_factory=_KeptHeaders())
# The row an email is about (its subject_id); a payment's emails also read its order
# and its last reason.
SUBJECT_MODELS: dict[EmailKind, Any] = {
    EmailKind.WELCOME: Customer,
    EmailKind.RECEIPT: Payment,
    EmailKind.WALLET_RECEIPT: Order,
    EmailKind.PAYMENT_FAILED: Payment,
    EmailKind.REFUND: Refund,
    EmailKind.REFUND_FAILED: Refund,
    EmailKind.REFUND_DECLINED: RefundRequest,
    EmailKind.REVIEW_ALERT: Payment,
    EmailKind.REFUND_ALERT: Refund,
    EmailKind.DISPUTE_ALERT: Dispute,
    EmailKind.OPS_ALERT: Alert,
}


class Subjects:
    """What rows' emails read besides their subject row's own columns: the recipient's
    language and a payment's last reason. `preload` reads them for a batch of rows in a
    few statements, with the payments, orders and order lines, into the session; a row
    not preloaded is read when asked (the dashboard's one message)."""

    def __init__(self) -> None:
        self._locales: dict[str, str | None] = {}
        self._reasons: dict[int, str | None] = {}
        self._held: list[object] = []  # the session keeps loaded rows only while referenced

    def preload(self, rows: Sequence[OutboxMessage]) -> None:
        wanted: dict[Any, set[int]] = {}
        for row in rows:
            wanted.setdefault(SUBJECT_MODELS[row.kind], set()).add(row.subject_id)
        for model, ids in wanted.items():
            self._held.extend(db.session.scalars(select(model).where(model.id.in_(ids))))
        order_ids = wanted.get(Order, set()) | {
            held.order_id for held in self._held if isinstance(held, Payment) and held.order_id
        }
        if order_ids:  # with their lines and products
            self._held.extend(
                db.session.scalars(
                    select(Order)
                    .where(Order.id.in_(order_ids))
                    .options(selectinload(Order.lines).selectinload(OrderLine.product))
                )
            )
        payment_ids = wanted.get(Payment, set())
        if payment_ids:
            last = db.session.execute(
                select(PaymentTransition.payment_id, PaymentTransition.reason)
                .where(PaymentTransition.payment_id.in_(payment_ids))
                .order_by(PaymentTransition.payment_id, PaymentTransition.id.desc())
                .ext(distinct_on(PaymentTransition.payment_id))
            )
            self._reasons.update({payment_id: None for payment_id in payment_ids})
            self._reasons.update({payment_id: reason for payment_id, reason in last})
        emails = {row.recipient for row in rows}
        found = db.session.execute(
            select(Customer.email, Customer.locale).where(Customer.email.in_(emails))
        )
        self._locales.update({address: None for address in emails})
        self._locales.update({address: locale for address, locale in found})

    def locale(self, row: OutboxMessage) -> str:
        """The language of the customer the email goes to (an admin's alert: English)."""
        if row.recipient not in self._locales:
            self._locales[row.recipient] = db.session.scalar(
                select(Customer.locale).where(Customer.email == row.recipient)
            )
        return self._locales[row.recipient] or DEFAULT_LOCALE

    def last_reason(self, payment_id: int) -> str:
        if payment_id not in self._reasons:
            self._reasons[payment_id] = db.session.scalar(
                select(PaymentTransition.reason)
                .where(PaymentTransition.payment_id == payment_id)
                .order_by(PaymentTransition.id.desc())
                .limit(1)
            )
        return self._reasons[payment_id] or ""


def render_all(rows: Sequence[OutboxMessage]) -> dict[int, EmailMessage | Exception]:
    """Each row's message, or why it cannot be written (ValueError, TypeError,
    LookupError: a line break in a recipient, a subject row gone), reading what they
    need in a few statements for all of them."""
    subjects = Subjects()
    subjects.preload(rows)
    written: dict[int, EmailMessage | Exception] = {}
    for row in rows:
        try:
            written[row.id] = render_email(row, subjects)
        except (ValueError, TypeError, LookupError) as exc:
            written[row.id] = exc
    return written


def render_email(row: OutboxMessage, subjects: Subjects | None = None) -> EmailMessage:
    """The message of an outbox row: plain text and HTML from templates/email/."""
    subjects = subjects or Subjects()
    context = {"public_url": settings().payments.public_url, **_subject_of(row, subjects)}
    message = EmailMessage(policy=POLICY)
    # In the customer's language (the admins' alerts in English), amounts formatted there.
    with force_locale(subjects.locale(row)):
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
    # A random boundary of our own: the generator's own is checked against every line of
    # the parts with a regular expression compiled for each message.
    message.set_boundary(f"=_{secrets.token_hex(16)}")
    return message


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


def _refund_context(refund: Refund | None) -> dict[str, object]:
    """A refund's email: its payment (the card), its order, and what the customer paid
    in the end (the charge less every refund that did not fail)."""
    if refund is None:
        raise LookupError("the refund is gone")
    payment = db.session.get(Payment, refund.payment_id) if refund.payment_id else None
    order_id = payment.order_id if payment is not None else refund.order_id
    order = db.session.get(Order, order_id) if order_id else None
    charged = payment.amount_minor if payment is not None else (order.total_minor if order else 0)
    same = Refund.payment_id == refund.payment_id if payment else Refund.order_id == order_id
    refunded = db.session.scalar(
        select(func.coalesce(func.sum(Refund.amount_minor), 0)).where(
            same, Refund.status.in_(OPEN_REFUND_STATUSES)
        )
    )
    return {
        "refund": refund,
        "payment": payment,
        "order": order,
        "refunded_minor": int(refunded or 0),
        "net_minor": max(0, charged - int(refunded or 0)),
    }


def _subject_of(row: OutboxMessage, subjects: Subjects) -> dict[str, object]:
    get = db.session.get
    if row.kind == EmailKind.WELCOME:
        return {"customer": get(Customer, row.subject_id)}
    if row.kind == EmailKind.WALLET_RECEIPT:
        return {"order": get(Order, row.subject_id)}
    if row.kind in (EmailKind.REFUND, EmailKind.REFUND_FAILED):
        return _refund_context(get(Refund, row.subject_id))
    if row.kind == EmailKind.REFUND_DECLINED:
        request = get(RefundRequest, row.subject_id)
        return {"request": request, "order": get(Order, request.order_id) if request else None}
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
    payment = get(Payment, row.subject_id)
    order = get(Order, payment.order_id) if payment is not None and payment.order_id else None
    return {"payment": payment, "order": order, "reason": subjects.last_reason(row.subject_id)}
