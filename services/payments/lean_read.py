"""A payment as its API client polls it (`GET /api/payments/<id>`), in one statement.

A client asks for its payment until it is final (every 2 s, as the status page does):
on the ORM path each ask is five statements in a transaction (the bearer token's
customer, the payment, its refunds, its archived and its hot transitions). Here it is
one statement on the lean paths' autocommit pool: who asks (the token's hash, joined to
the payment's customer), the payment and its transitions. The reply is built by the one
builder, services/payments/reads.py's `payment_json`.

Anything else returns None and the caller takes the ORM path, which decides and answers
as before: no such payment of this token's customer (a 401 or a 404 there), a payment
with a refund or with archived transitions (rare, and read there in full), a dropped
connection.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from models import PaymentPurpose, PaymentStatus, TransitionSource
from models.types import as_utc
from services.platform import autocommit

_READ = autocommit.plain(
    """
SELECT p.id, p.idempotency_key, p.purpose, p.order_id, p.wallet_id, p.provider,
    p.amount_minor, p.currency, p.status, p.provider_payment_id, p.decline_code,
    p.payment_method, p.action_url, p.created_at, p.updated_at,
    t.froms, t.tos, t.sources, t.reasons, t.ats
FROM payments p
JOIN customers c ON c.id = p.customer_id
CROSS JOIN LATERAL (
    SELECT array_agg(tr.from_status ORDER BY tr.id) AS froms,
        array_agg(tr.to_status ORDER BY tr.id) AS tos,
        array_agg(tr.source ORDER BY tr.id) AS sources,
        array_agg(tr.reason ORDER BY tr.id) AS reasons,
        array_agg(tr.created_at ORDER BY tr.id) AS ats
    FROM payment_transitions tr WHERE tr.payment_id = p.id
) t
WHERE p.id = :payment_id AND c.api_token_hash = :token_hash
    AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.payment_id = p.id)
    AND NOT EXISTS (SELECT 1 FROM payment_transitions_archive a WHERE a.payment_id = p.id)
"""
)


@dataclass(frozen=True)
class ReadTransition:
    """A transition as the statement read it."""

    from_status: PaymentStatus | None
    to_status: PaymentStatus
    source: TransitionSource
    reason: str
    created_at: datetime


@dataclass(frozen=True)
class ReadPayment:
    """A payment as the statement read it: what `payment_json` shows of one."""

    id: int
    idempotency_key: uuid.UUID
    purpose: PaymentPurpose
    order_id: int | None
    wallet_id: int | None
    provider: str
    amount_minor: int
    currency: str
    status: PaymentStatus
    provider_payment_id: str | None
    decline_code: str | None
    payment_method: str | None
    action_url: str | None
    created_at: datetime
    updated_at: datetime
    transitions: tuple[ReadTransition, ...]


def read_payment_by_token(token_hash: str, payment_id: int) -> ReadPayment | None:
    """The payment of the customer whose API token hashes to `token_hash`, with its
    transitions, or None: take the ORM path instead."""
    try:
        row = autocommit.first_row(_READ, {"payment_id": payment_id, "token_hash": token_hash})
    except autocommit.ConnectionLost:
        return None
    return None if row is None else _payment(row)


def _payment(row: Any) -> ReadPayment:
    transitions = tuple(
        ReadTransition(
            from_status=PaymentStatus(was) if was is not None else None,
            to_status=PaymentStatus(to),
            source=TransitionSource(source),
            reason=reason,
            created_at=as_utc(at),
        )
        for was, to, source, reason, at in zip(
            row.froms or (),
            row.tos or (),
            row.sources or (),
            row.reasons or (),
            row.ats or (),
            strict=True,
        )
    )
    return ReadPayment(
        id=row.id,
        idempotency_key=row.idempotency_key,
        purpose=PaymentPurpose(row.purpose),
        order_id=row.order_id,
        wallet_id=row.wallet_id,
        provider=row.provider,
        amount_minor=row.amount_minor,
        currency=row.currency,
        status=PaymentStatus(row.status),
        provider_payment_id=row.provider_payment_id,
        decline_code=row.decline_code,
        payment_method=row.payment_method,
        action_url=row.action_url,
        created_at=as_utc(row.created_at),
        updated_at=as_utc(row.updated_at),
        transitions=transitions,
    )
