"""The dashboard's one search box: whatever an operator has at hand (a payment id, an
idempotency key, an order id, a customer's email, the provider's payment id, a webhook
event id, a refund id or the provider's refund id) finds the payments it names. Every
lookup is one indexed equality; nothing scans history."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import select

from extensions import db
from models import Customer, Payment, ProcessedWebhook, Refund
from models.types import parse_row_id, parse_uuid

MAX_HITS = 50


@dataclass(frozen=True)
class Hit:
    payment: Payment
    why: str  # what matched: "payment id", "order id", ...


def search(raw: str) -> list[Hit]:
    """The payments `raw` names, newest first, each once (with the first reason found)."""
    text = raw.strip()[:200]
    if not text:
        return []
    found: dict[int, str] = {}

    def add(ids: object, why: str) -> None:
        for payment_id in ids:  # type: ignore[attr-defined]
            if payment_id is not None:
                found.setdefault(int(payment_id), why)

    row_id = parse_row_id(text.lstrip("#"))
    if row_id is not None:
        add([row_id], "payment id")
        add(_ids(select(Payment.id).where(Payment.order_id == row_id)), "order id")
        add(_ids(select(Refund.payment_id).where(Refund.id == row_id)), "refund id")
    key = _uuid(text)
    if key is not None:
        add(_ids(select(Payment.id).where(Payment.idempotency_key == key)), "idempotency key")
        add(_ids(select(Refund.payment_id).where(Refund.idempotency_key == key)), "refund key")
    if "@" in text:
        add(
            _ids(
                select(Payment.id)
                .join(Customer, Customer.id == Payment.customer_id)
                .where(Customer.email == text.lower())
                .order_by(Payment.id.desc())
                .limit(MAX_HITS)
            ),
            "customer email",
        )
    elif row_id is None and key is None:
        add(_ids(select(Payment.id).where(Payment.provider_payment_id == text)), "provider id")
        add(
            _ids(select(ProcessedWebhook.payment_id).where(ProcessedWebhook.event_id == text)),
            "webhook event",
        )
        add(
            _ids(select(Refund.payment_id).where(Refund.provider_refund_id == text)),
            "provider refund id",
        )
    if not found:
        return []
    payments = db.session.scalars(
        select(Payment).where(Payment.id.in_(list(found))).order_by(Payment.id.desc())
    ).all()
    return [Hit(p, found[p.id]) for p in payments[:MAX_HITS]]


def _ids(statement: object) -> list[int]:
    return list(db.session.scalars(statement))  # type: ignore[call-overload]


def _uuid(text: str) -> uuid.UUID | None:
    try:
        return parse_uuid(text)
    except ValueError:
        return None
