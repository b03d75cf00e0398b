"""Card testing: declines counted per customer, per address and per card, and new
payments refused (429 with Retry-After) once one of them passes its limit.

A shop that lets anyone try card after card is a tool for testing stolen numbers, and
the provider closes such accounts (Stripe's and Adyen's advice: rate-limit attempts per
customer, card and IP, and watch the decline rate). Each card decline adds one to three
counters in Redis, each for CARD_TESTING_WINDOW_S from its first decline (the login
throttle's scheme, services/accounts/login_throttle.py):
- the customer's: past CARD_TESTING_MAX_DECLINES_PER_CUSTOMER the customer's
  `payments_blocked_until` is set, which the intake reads (the lean statement too);
- the address's (the payment's `client_address`): past ..._PER_ADDRESS the address gets
  a `payment_blocks` row, which the intake reads (in the lean statement: no round trip);
- the card's for that customer (the provider's card fingerprint, Braintree's
  unique_number_identifier, where its answer names one): past ..._PER_CARD the card is
  not charged again by that customer; the charge job refuses it without sending
  (`is_card_blocked`), reading the new card's fingerprint before the send for a customer
  declined lately or with another attempt in flight (`card_fingerprint`).
Attempts in flight hold their place among these declines before they are sent
(services/payments/in_flight.py), so thirty at once pass no limit. Declines count from
every source: a send's answer, a lookup's, the provider's event (3-D Secure failed).
A limit that trips is counted in /metrics and alerted to ops once per window.
Only card declines count: our own refused requests (could not be processed) do not.
"""

from __future__ import annotations

import hashlib
import logging
from contextlib import suppress
from datetime import datetime, timedelta
from typing import Any

from prometheus_client import Counter
from redis.exceptions import RedisError
from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from extensions import db, redis_client
from models import Customer, Payment, PaymentBlock
from models.types import utcnow
from resilience.gateway import CallContext
from services.platform.errors import ClientError
from services.platform.provider_clients import alarm, gateway_for, provider_for
from settings import settings

log = logging.getLogger(__name__)

CARD_TESTING_TRIPS = Counter(
    "card_testing_trips_total",
    "Card-testing limits that tripped: new payments refused for a window",
    ["scope"],
)
CARD_TESTING_REFUSALS = Counter(
    "card_testing_refusals_total", "Payments refused by a tripped card-testing limit", ["scope"]
)


class TooManyDeclinesError(ClientError):
    """Too many card declines from this customer, address or card: try again later."""

    code = "too_many_declines"
    status = 429

    def __init__(self, retry_after_s: int, scope: str) -> None:
        super().__init__(
            f"too many card payments were declined (by this {scope}): "
            f"try again in {retry_after_s} s",
            details={"retry_after_s": retry_after_s},
        )
        CARD_TESTING_REFUSALS.labels(scope).inc()


def address_key(address: str) -> str:
    """How `payment_blocks` names an address (hashed: never stored in clear there)."""
    return _hashed(f"address:{address}")


def _hashed(text: str) -> str:
    # Redis keys never carry an address or a card's fingerprint in clear text.
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def count_key(scope: str, name: str) -> str:
    return f"declines:{scope}:{_hashed(name)}"


def _blocked_key(scope: str, name: str) -> str:
    return f"declines:blocked:{scope}:{_hashed(name)}"


def card_name(customer_id: int, fingerprint: str) -> str:
    return f"{customer_id}:{fingerprint}"


def count_decline(payment: Payment, fingerprint: str | None) -> None:
    """A card declined this payment: count it; past a limit, block (the customer's
    block is written in the caller's transaction). Without Redis nothing is counted."""
    config = settings().card_testing
    db.session.execute(
        update(Customer).where(Customer.id == payment.customer_id).values(last_declined_at=utcnow())
    )
    counted = {"customer": (str(payment.customer_id), config.max_per_customer)}
    if payment.client_address:
        counted["address"] = (payment.client_address, config.max_per_address)
    if fingerprint:
        counted["card"] = (card_name(payment.customer_id, fingerprint), config.max_per_card)
    try:
        pipe = redis_client.client.pipeline()
        for scope, (name, _) in counted.items():
            key = count_key(scope, name)
            pipe.set(key, 0, ex=config.window_s, nx=True)  # the window starts at the first
            pipe.incr(key)
            pipe.ttl(key)
        answers = pipe.execute()
    except RedisError as exc:
        log.warning("declines of payment %s not counted: %s", payment.id, exc)
        return
    for index, (scope, (name, limit)) in enumerate(counted.items()):
        count, ttl_s = int(answers[3 * index + 1]), int(answers[3 * index + 2])
        if count >= limit:
            _block(scope, name, max(ttl_s, 1), payment, count, is_new=count == limit)


def _block(
    scope: str, name: str, for_s: int, payment: Payment, count: int, *, is_new: bool
) -> None:
    """Refuse the scope's new payments for `for_s`; `is_new`: this decline tripped it
    (once a window), so it is counted and alerted."""
    until = utcnow() + timedelta(seconds=for_s)
    if scope == "customer":
        db.session.execute(
            update(Customer)
            .where(Customer.id == payment.customer_id)
            .values(payments_blocked_until=until)
        )
    elif scope == "address":
        row = {"scope": scope, "key": address_key(name), "until": until, "created_at": utcnow()}
        db.session.execute(
            pg_insert(PaymentBlock)
            .values(**row)
            .on_conflict_do_update(index_elements=["scope", "key"], set_={"until": until})
        )
    else:
        with suppress(RedisError):
            redis_client.client.set(_blocked_key(scope, name), 1, ex=for_s, nx=True)
    if not is_new:
        return
    CARD_TESTING_TRIPS.labels(scope).inc()
    log.warning(
        "card testing? %d declines by one %s (payment %s, customer %s): new payments refused "
        "until %s",
        count,
        scope,
        payment.id,
        payment.customer_id,
        f"{until:%H:%M:%S} UTC",
    )
    window = int(until.timestamp()) // settings().card_testing.window_s
    alarm(
        "card_testing",
        f"card_testing:{scope}:{_hashed(name)}:{window}",
        f"{count} card declines by one {scope} (the latest: payment {payment.id} of customer "
        f"{payment.customer_id}): its new payments are refused until {until:%H:%M} UTC. "
        "Card testing? The dashboard's payments list shows the declines.",
    )


def check(customer: Customer, address: str | None, now: datetime | None = None) -> None:
    """Raise TooManyDeclinesError when the customer or the address is blocked."""
    now = now or utcnow()
    blocked = customer.payments_blocked_until
    if blocked is not None and blocked > now:
        raise TooManyDeclinesError(int((blocked - now).total_seconds()) + 1, "customer")
    check_address(address, now)


def check_address(address: str | None, now: datetime | None = None) -> None:
    """Raise TooManyDeclinesError when the address is blocked."""
    if not address:
        return
    until = db.session.scalar(
        select(PaymentBlock.until).where(
            PaymentBlock.scope == "address", PaymentBlock.key == address_key(address)
        )
    )
    now = now or utcnow()
    if until is not None and until > now:
        raise TooManyDeclinesError(int((until - now).total_seconds()) + 1, "address")


def is_card_blocked(customer_id: int, fingerprint: str) -> bool:
    """Whether this customer's declines of this card passed the limit."""
    try:
        return bool(
            redis_client.client.exists(_blocked_key("card", card_name(customer_id, fingerprint)))
        )
    except RedisError:
        return False


def has_recent_declines(last_declined_at: datetime | None, now: datetime) -> bool:
    """Whether the customer's latest card decline (`Customer.last_declined_at`, which the
    charge's claim reads with its row: no round trip) is within the window; then a new
    card's fingerprint is worth asking for before it is charged."""
    window = timedelta(seconds=settings().card_testing.window_s)
    return last_declined_at is not None and last_declined_at > now - window


def card_fingerprint(row: Any) -> str | None:
    """The provider's fingerprint of a claimed payment's card, read before it is sent (a
    read, through the breaker: a failed read says None); None for a provider that cannot
    say it before a charge (Braintree names its card only in its answer)."""
    read = getattr(provider_for(row.provider), "card_fingerprint", None)
    if not (read and row.payment_method):
        return None
    context = CallContext("card_check", row.id, str(row.idempotency_key), kind="charge")
    # Beside the charge: never the breaker's verdict (an answering card endpoint says
    # nothing of a hanging charge endpoint); a failed read refuses nothing.
    found = gateway_for(row.provider).call(context, lambda: read(row.payment_method), counts=False)
    return found if isinstance(found, str) else None
