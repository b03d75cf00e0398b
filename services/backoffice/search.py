"""The dashboard's one search box: whatever an operator has at hand (a payment id, an
idempotency key, an order id, a customer's email, the card's last four digits, an
amount ("10.00", "EUR 10,00", "10"), the provider's payment id, a webhook event id, a
refund id or the provider's refund id) finds the payments it names. Every lookup is one
indexed equality (newest first, bounded); nothing scans history."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import select

from extensions import db
from models import Customer, Payment, ProcessedWebhook, Refund
from models.money import exponent_of
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
        for payment_id in ids:  # type: ignore[attr-defined]  # a Row's columns are not typed
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
    if LAST4.fullmatch(text):
        add(_newest(Payment.card_last4 == text), "card's last 4")
    amount = _amount(text)
    if amount is not None:
        minor, currency = amount
        where = Payment.amount_minor == minor
        add(
            _newest(where if currency is None else where & (Payment.currency == currency)), "amount"
        )
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


LAST4 = re.compile(r"[0-9]{4}")
AMOUNT = re.compile(
    r"(?:(?P<before>[A-Za-z]{3})\s*)?(?P<number>[0-9]{1,9}(?:[.,][0-9]{1,3})?)"
    r"(?:\s*(?P<after>[A-Za-z]{3}))?"
)


def _amount(text: str) -> tuple[int, str | None] | None:
    """An amount typed as people type it, in minor units of its currency (two decimals
    when none is named), with the currency if named; None when it is not one."""
    found = AMOUNT.fullmatch(text)
    if found is None:
        return None
    named = (found.group("before") or found.group("after") or "").upper() or None
    try:
        exponent = exponent_of(named) if named else 2
    except ValueError:
        return None
    number = Decimal(found.group("number").replace(",", "."))
    minor = number.scaleb(exponent)
    return (int(minor), named) if minor == minor.to_integral_value() and minor > 0 else None


def _newest(where: Any) -> list[int]:
    return _ids(select(Payment.id).where(where).order_by(Payment.id.desc()).limit(MAX_HITS))


def _ids(statement: object) -> list[int]:
    return list(db.session.scalars(statement))  # type: ignore[call-overload]  # a union of statements has no scalars overload


def _uuid(text: str) -> uuid.UUID | None:
    try:
        return parse_uuid(text)
    except ValueError:
        return None
