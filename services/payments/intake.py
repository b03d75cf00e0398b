"""The lean intake: a new order payment in one statement on PostgreSQL.

The happy path of `POST /api/orders/<id>/payments` and of the Pay form is one statement
in its own transaction (autocommit): it checks who is asking (the bearer token's hash, or
the signed-in customer's session version), locks the order, and inserts the payment and
its creation transition, amounts from the order row. Then the charge is enqueued: two
round trips (one to PostgreSQL, one to Redis), against seventeen for the ORM path.

Anything else (a repeat of a key, an order not open or already being paid, someone
else's order, a revoked token) inserts nothing here: the statement returns no
row and the caller takes the ORM path (services/payments/checkout.py), which decides and answers
exactly as before. So this module never answers an error; it only saves the work.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from models import OrderStatus, PaymentPurpose, PaymentStatus, TransitionSource
from models.types import utcnow
from providers.registry import spec_for
from services.movements import lifecycle
from services.payments import attempts, routing
from services.payments.kind import CHARGE
from services.payments.state import CREATION_REASON
from services.platform import autocommit
from settings import settings

# {who} is one of the two checks below, never client text.
_INSERT = """
WITH locked AS (
    SELECT o.id, o.customer_id, o.total_minor, o.currency
    FROM orders o JOIN customers c ON c.id = o.customer_id
    WHERE o.id = :order_id AND o.status = :open AND {who}
        AND (c.payments_blocked_until IS NULL OR c.payments_blocked_until <= :now)
        AND NOT EXISTS (SELECT 1 FROM payment_blocks b
            WHERE b.scope = 'address' AND b.key = :address_key AND b.until > :now)
        AND o.total_minor >= CAST(COALESCE(CAST(:minimums AS jsonb) ->> o.currency, '1') AS bigint)
    FOR UPDATE OF o
), payment AS (
    INSERT INTO payments (idempotency_key, customer_id, purpose, order_id, provider,
        amount_minor, currency, status, payment_method, client_address, send_count,
        reconcile_attempts, is_effect_applied, effect_reversals, created_at, updated_at)
    SELECT :key, customer_id, :purpose, id, :provider, total_minor, currency, :pending,
        :payment_method, :address, 0, 0, false, 0, :now, :now
    FROM locked
    ON CONFLICT DO NOTHING
    RETURNING id, customer_id, order_id, amount_minor, currency
), transition AS (
    INSERT INTO payment_transitions (payment_id, from_status, to_status, source, reason,
        created_at)
    SELECT id, NULL, :pending, :source, :reason, :now FROM payment
    RETURNING id
)
SELECT payment.id, payment.customer_id, payment.order_id, payment.amount_minor,
    payment.currency, transition.id AS transition_id
FROM payment, transition
"""
_BY_TOKEN = autocommit.plain(_INSERT.format(who="c.api_token_hash = :token_hash"))
_BY_SESSION = autocommit.plain(
    _INSERT.format(who="c.id = :customer_id AND c.session_version = :version")
)


@dataclass(frozen=True)
class NewTransition:
    """The creation transition the statement wrote."""

    id: int
    created_at: datetime
    from_status: None = None
    to_status: PaymentStatus = PaymentStatus.PENDING
    source: TransitionSource = TransitionSource.CHECKOUT
    reason: str = CREATION_REASON


@dataclass(frozen=True)
class NewPayment:
    """A payment the lean path created, as its statement wrote it: the reply is built
    from this (services/payments/reads.py), without an ORM object or a read back."""

    id: int
    idempotency_key: uuid.UUID
    customer_id: int
    order_id: int
    provider: str
    amount_minor: int
    currency: str
    payment_method: str
    created_at: datetime
    transition: NewTransition
    # What every payment is when this statement creates it.
    status: PaymentStatus = PaymentStatus.PENDING
    purpose: PaymentPurpose = PaymentPurpose.ORDER
    wallet_id: None = None
    provider_payment_id: None = None
    decline_code: None = None
    action_url: None = None

    @property
    def updated_at(self) -> datetime:
        return self.created_at


def pay_order_by_token(
    token_hash: str,
    order_id: int,
    key: uuid.UUID,
    card: object,
    address: str | None = None,
    provider: object = None,
) -> NewPayment | None:
    """The payment for an API client's order, or None: take the ORM path instead (which
    also answers a customer blocked for card testing)."""
    return _pay(_BY_TOKEN, {"token_hash": token_hash}, order_id, key, card, address, provider)


def pay_order_by_session(
    customer_id: int,
    session_version: int,
    order_id: int,
    key: uuid.UUID,
    card: object,
    address: str | None = None,
    provider: object = None,
) -> NewPayment | None:
    """The payment for a signed-in customer's order (the Pay form, whose card entry was
    `provider`'s), or None."""
    who = {"customer_id": customer_id, "version": session_version}
    return _pay(_BY_SESSION, who, order_id, key, card, address, provider)


def _pay(
    statement: autocommit.Plain,
    who: Mapping[str, object],
    order_id: int,
    key: uuid.UUID,
    card: object,
    address: str | None,
    asked: object,
) -> NewPayment | None:
    provider = routing.lean_provider(asked, card)
    if provider is None or not isinstance(card, str):
        return None
    if not spec_for(provider).accepts_payment_method(card):
        return None  # the ORM path answers the malformed card token
    now = utcnow()
    params = {
        **who,
        "order_id": order_id,
        "open": OrderStatus.OPEN.value,
        "key": key,
        "purpose": PaymentPurpose.ORDER.value,
        "provider": provider,
        # Under the shop's smallest card payment, or in a currency the provider does not
        # take: no row, and the ORM path says why.
        "minimums": _minimums(provider),
        "pending": PaymentStatus.PENDING.value,
        "payment_method": card,
        "address": (address or "")[:45] or None,
        "address_key": attempts.address_key(address or ""),
        "source": TransitionSource.CHECKOUT.value,
        "reason": CREATION_REASON,
        "now": now,
    }
    # The statement is the transaction (autocommit), committed (the intent durable)
    # before the charge is enqueued.
    try:
        row = autocommit.first_row(statement, params)
    except autocommit.ConnectionLost:
        # The ORM path asks again with the same key, on new connections (the pools let
        # the dropped ones go), so a statement that did commit is found, not repeated.
        return None
    if row is None:
        return None
    created = _new_payment(row, key, provider, card, now)
    lifecycle.enqueue_send(CHARGE, provider, created.id, is_first=True)
    return created


def _minimums(provider: str) -> str:
    currencies = settings().money.currencies
    served = tuple((c, routing.serves(provider, c)) for c in currencies)
    return _minimums_of(served, settings().payments.providers)


@functools.cache
def _minimums_of(served: tuple[tuple[str, bool], ...], enabled: tuple[str, ...]) -> str:
    """The smallest order by currency, as the statement reads it (a currency not served:
    more than any order). `enabled` decides the shop's minimums (routing.minimum_minor)."""
    del enabled  # part of the cache's key only
    return json.dumps({c: routing.minimum_minor(c) if ok else 2**62 for c, ok in served})


def _new_payment(
    row: autocommit.Record, key: uuid.UUID, provider: str, card: str, now: datetime
) -> NewPayment:
    return NewPayment(
        id=row.id,
        idempotency_key=key,
        customer_id=row.customer_id,
        order_id=row.order_id,
        provider=provider,
        amount_minor=row.amount_minor,
        currency=row.currency,
        payment_method=card,
        created_at=now,
        transition=NewTransition(id=row.transition_id, created_at=now),
    )
