"""Orders and the start of a payment: the intent is committed before anything else."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from extensions import db
from models import (
    Customer,
    Order,
    OrderStatus,
    Payment,
    PaymentPurpose,
    PaymentStatus,
    TransitionSource,
    Wallet,
)
from models.money import InvalidAmountError, validate_money
from models.types import parse_uuid
from providers.registry import spec_for
from services.movements import lifecycle
from services.movements.locks import lock_owned_order
from services.payments import attempts, routing
from services.payments.kind import CHARGE
from services.payments.state import record_creation
from services.platform.errors import ConflictError, NotFoundError, UnprocessableError
from settings import settings

log = logging.getLogger(__name__)


def parse_idempotency_key(raw: str | None) -> uuid.UUID:
    if not raw:
        raise UnprocessableError(
            "an idempotency key (UUID) is required", code="idempotency_key_missing", status=400
        )
    try:
        return parse_uuid(raw)
    except ValueError:
        raise UnprocessableError(
            "the idempotency key must be a UUID", code="idempotency_key_invalid", status=400
        ) from None


def _address(address: str | None) -> str | None:
    return (address or "")[:45] or None


def parse_payment_method(raw: object, provider: str) -> str:
    """The card token the customer's browser got from the provider (Stripe: pm_...,
    Braintree: a nonce), checked against the provider's token shape; never card data."""
    name = provider
    if raw is None or raw == "":
        raise UnprocessableError(
            "a payment_method (the provider's card token, e.g. pm_...) is required",
            code="payment_method_missing",
        )
    if not spec_for(name).accepts_payment_method(raw):
        raise UnprocessableError(
            f"payment_method is not a {name} card token", code="payment_method_invalid"
        )
    return str(raw)


def owned_order(customer: Customer, order_id: int) -> Order:
    order = db.session.get(Order, order_id)
    if order is None or order.customer_id != customer.id:
        # Someone else's order looks exactly like a missing one.
        raise NotFoundError(f"no order {order_id}", code="order_not_found")
    return order


def owned_payment(customer: Customer, payment_id: int) -> Payment:
    payment = db.session.get(Payment, payment_id)
    if payment is None or payment.customer_id != customer.id:
        raise NotFoundError(f"no payment {payment_id}", code="payment_not_found")
    return payment


def start_order_payment(
    customer: Customer,
    order_id: int,
    key: uuid.UUID,
    card: object,
    address: str | None = None,
    provider: object = None,
) -> tuple[Payment, bool]:
    """Record the intent to pay an order (pending), commit, then enqueue the charge.

    `card` is the provider's card token as the client sent it (checked here), `provider`
    the provider the page's card entry was (routing.provider_of decides). Returns
    (payment, is_new). A repeat with the same key returns the same payment. Raises
    NotFoundError, UnprocessableError (no or a malformed card token, key reused for
    another order or card), ConflictError (order not open, or paid by another payment)
    or TooManyDeclinesError (card testing: the customer or `address`, the client's, is
    blocked for a while).
    """
    # Locked: a wallet payment of the same order waits for this transaction, and we
    # for it, so an order is never paid twice by the two routes.
    order = lock_owned_order(customer, order_id)
    name = routing.provider_of(provider, card, order.currency, is_orders=True)
    payment_method = parse_payment_method(card, name)
    routing.check_minimum(order.total_minor, order.currency)
    payment = Payment(
        idempotency_key=key,
        customer_id=customer.id,
        purpose=PaymentPurpose.ORDER,
        order_id=order.id,
        provider=name,
        amount_minor=order.total_minor,
        currency=order.currency,
        payment_method=payment_method,
        client_address=_address(address),
    )
    existing = _insert_or_existing(payment, key)
    if existing is not None:
        if existing.order_id != order.id or existing.customer_id != customer.id:
            raise UnprocessableError(
                "this idempotency key was used for another request", code="idempotency_key_reused"
            )
        _check_same_card(existing, payment_method)
        db.session.rollback()  # a repeat writes nothing: the order's lock is let go
        return existing, False
    if order.status != OrderStatus.OPEN:
        db.session.rollback()
        raise ConflictError(f"order {order.id} is {order.status.value}", code="order_not_open")
    _check_attempts(customer, address)  # a repeat of a key above is answered all the same
    return _commit_and_enqueue(payment), True


def start_topup_payment(
    customer: Customer,
    wallet: Wallet,
    amount: object,
    key: uuid.UUID,
    card: object,
    address: str | None = None,
    provider: object = None,
) -> tuple[Payment, bool]:
    """Record the intent to top a wallet up through the provider; same rules as orders."""
    if wallet.customer_id != customer.id:
        raise NotFoundError(f"no wallet {wallet.id}", code="wallet_not_found")
    try:
        amount_minor, _ = validate_money(
            amount,
            wallet.currency,
            max_minor=settings().money.max_amount_minor,
            allowed=settings().money.currencies,
        )
    except InvalidAmountError as exc:
        raise UnprocessableError(str(exc), code="invalid_amount") from None
    name = routing.provider_of(provider, card, wallet.currency)
    payment_method = parse_payment_method(card, name)
    routing.check_minimum(amount_minor, wallet.currency)
    payment = Payment(
        idempotency_key=key,
        customer_id=customer.id,
        purpose=PaymentPurpose.WALLET_TOPUP,
        wallet_id=wallet.id,
        provider=name,
        amount_minor=amount_minor,
        currency=wallet.currency,
        payment_method=payment_method,
        client_address=_address(address),
    )
    existing = _insert_or_existing(payment, key)
    if existing is not None:
        if existing.wallet_id != wallet.id or existing.amount_minor != amount_minor:
            raise UnprocessableError(
                "this idempotency key was used for another request", code="idempotency_key_reused"
            )
        _check_same_card(existing, payment_method)
        db.session.rollback()  # a repeat writes nothing
        return existing, False
    _check_attempts(customer, address)
    return _commit_and_enqueue(payment), True


def _check_attempts(customer: Customer, address: str | None) -> None:
    """Card testing: refuse a new payment of a blocked customer or address (nothing
    written: the inserted row is rolled back)."""
    try:
        attempts.check(customer, address)
    except attempts.TooManyDeclinesError:
        db.session.rollback()
        raise


def _check_same_card(existing: Payment, payment_method: str) -> None:
    """A repeat of a payment (same key) with another card is another request: refused,
    naming the payment the key belongs to (the customer's own)."""
    if existing.payment_method != payment_method:
        raise UnprocessableError(
            "this idempotency key was used with another payment method",
            code="idempotency_key_reused",
            details={"payment_id": existing.id},
        )


def _insert_or_existing(payment: Payment, key: uuid.UUID) -> Payment | None:
    """Insert the payment; on a UNIQUE violation return what is already there instead."""
    try:
        with db.session.begin_nested():
            db.session.add(payment)
            db.session.flush()
            record_creation(payment, TransitionSource.CHECKOUT)
            db.session.flush()
    except IntegrityError:
        # The key (or the order's one active payment) exists: the insert failed, so
        # return the payment that won instead of writing a second one. Only the savepoint
        # was rolled back: the order's lock is still ours, so the payment that blocked
        # this one cannot fail (and vanish from the active index) while we look for it.
        by_key = db.session.scalar(select(Payment).where(Payment.idempotency_key == key))
        if by_key is not None:
            return by_key
        active = db.session.scalar(
            select(Payment).where(
                Payment.order_id == payment.order_id, Payment.status != PaymentStatus.FAILED
            )
        )
        if active is None:  # not expected under the lock; still a client's answer
            raise ConflictError(
                f"order {payment.order_id} is being paid right now; try again",
                code="order_payment_in_progress",
            ) from None
        raise ConflictError(
            f"order {payment.order_id} already has payment {active.id} ({active.status.value})",
            code="order_payment_in_progress",
            details={"payment_id": active.id},
        ) from None
    return None


def _commit_and_enqueue(payment: Payment) -> Payment:
    db.session.commit()  # the intent is durable before anything talks to a provider
    lifecycle.enqueue_send(CHARGE, payment.provider, payment.id, is_first=True)
    return payment


def existing_active_payment(order: Order) -> Payment | None:
    return db.session.scalar(
        select(Payment).where(Payment.order_id == order.id, Payment.status != PaymentStatus.FAILED)
    )


def recent_orders(customer: Customer, limit: int = 20) -> Sequence[Order]:
    return db.session.scalars(
        select(Order).where(Order.customer_id == customer.id).order_by(Order.id.desc()).limit(limit)
    ).all()
