"""A customer's request for a refund: asked from the order page with a reason, within
the window the shop sets (REFUND_REQUEST_WINDOW_DAYS after paying), one waiting per
order. A refunder approves it, which makes the refund through the refund path with a
key born of the request (approving twice makes one refund), or declines it with a
message the customer is emailed."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from extensions import db
from models import (
    Customer,
    EmailKind,
    Order,
    OrderStatus,
    Payment,
    PaymentStatus,
    Refund,
    RefundRequest,
    RefundRequestStatus,
)
from models.money import N_
from models.types import utcnow
from services.notifications.outbox import queue_email
from services.payments.checkout import owned_order
from services.platform.errors import ConflictError, NotFoundError, UnprocessableError
from services.refunds.issue import refund_payment, refund_wallet_order
from services.refunds.reads import refund_page
from settings import settings

MIN_TEXT, MAX_TEXT = 5, 500
ASKABLE = (OrderStatus.PAID, OrderStatus.PARTIALLY_REFUNDED)
# The refund key of a request: the same on every approval of it (one refund).
REQUEST_KEYS = uuid.UUID("4f1f6c0e-9a7e-4f55-8a53-3c1b2b3d5e01")


def why_not_ask(order: Order) -> str:
    """'' when the customer may ask for a refund of the order now; else why not (a
    message to translate, with %(days)s)."""
    window_days = settings().payments.refund_request_window_days
    if window_days == 0 or order.status not in ASKABLE or order.paid_at is None:
        return N_("Refunds of this order are not asked for here.")
    if utcnow() > order.paid_at + timedelta(days=window_days):
        return N_("The %(days)s days to ask for a refund of this order have passed.")
    if waiting_request(order.id) is not None:
        return N_("You asked for a refund of this order; the shop will answer by email.")
    return ""


def ask(customer: Customer, order_id: int, reason: str) -> RefundRequest:
    """Record the customer's request for a refund of their order. Commits; raises
    ClientError (nothing written): not their order, outside the window, asked already,
    a reason too short or too long."""
    order = owned_order(customer, order_id)
    cleaned = _text(reason, "reason_required")
    why = why_not_ask(order)
    if why:
        db.session.rollback()
        raise ConflictError(why, code="refund_not_askable")
    request = RefundRequest(order_id=order.id, customer_id=customer.id, reason=cleaned)
    db.session.add(request)
    try:
        db.session.commit()
    except IntegrityError:  # a second tab asked at the same moment: one waits
        db.session.rollback()
        raise ConflictError(why_not_ask(order), code="refund_not_askable") from None
    return request


def waiting_request(order_id: int) -> RefundRequest | None:
    return db.session.scalar(
        select(RefundRequest).where(
            RefundRequest.order_id == order_id,
            RefundRequest.status == RefundRequestStatus.WAITING,
        )
    )


def requests_of(order_id: int) -> list[RefundRequest]:
    """The order's requests, oldest first (what the order page shows)."""
    return list(
        db.session.scalars(
            select(RefundRequest)
            .where(RefundRequest.order_id == order_id)
            .order_by(RefundRequest.id)
        )
    )


@dataclass(frozen=True)
class QueueRow:
    request: RefundRequest
    order: Order
    email: str
    payment_id: int | None  # the order's charged card payment; None: paid from the wallet


def queue(status: RefundRequestStatus, limit: int = 200) -> list[QueueRow]:
    """The console's queue: requests of a status (waiting ones oldest first, decided ones
    newest first), with their order, the customer's email and the charged payment."""
    order_by = (
        RefundRequest.id if status == RefundRequestStatus.WAITING else RefundRequest.id.desc()
    )
    found = db.session.execute(
        select(RefundRequest, Order, Customer.email, Payment.id)
        .join(Order, Order.id == RefundRequest.order_id)
        .join(Customer, Customer.id == RefundRequest.customer_id)
        .outerjoin(
            Payment,
            (Payment.order_id == Order.id) & (Payment.status == PaymentStatus.SUCCEEDED),
        )
        .where(RefundRequest.status == status)
        .order_by(order_by)
        .limit(limit)
    ).all()
    return [QueueRow(*row) for row in found]


def currency_of(request_id: int) -> str:
    """The currency of the request's order ('' for no such request): a typed amount is
    read in it, never in one a form says."""
    found = db.session.scalar(
        select(Order.currency)
        .join(RefundRequest, RefundRequest.order_id == Order.id)
        .where(RefundRequest.id == request_id)
    )
    return found or ""


def approve(request_id: int, amount_minor: int | None, actor: str) -> str:
    """Refund the request's order (all that is left when `amount_minor` is None) through
    the refund path, and mark the request approved in the refund's own transaction, under
    the order's lock and then the request's: decided once. A decline at the same moment
    either comes first (this approval is refused, nothing refunded) or finds it approved
    (refused, nothing emailed); a second approval finds it approved. Commits; raises
    ClientError."""
    request = _waiting(request_id)
    key = uuid.uuid5(REQUEST_KEYS, str(request.id))
    reason = f"customer's request #{request.id}: {request.reason}"
    paid = _charged_payment(request.order_id)
    order_id = request.order_id
    db.session.rollback()  # the refund path takes its own locks, order first

    def decided(refund: Refund) -> None:
        waiting = _waiting(request_id)  # still undecided, or nothing is refunded
        waiting.status = RefundRequestStatus.APPROVED
        waiting.refund_id, waiting.decided_by, waiting.decided_at = refund.id, actor, utcnow()

    if paid is not None:
        left = _left("payment", paid)
        refund, _ = refund_payment(paid, amount_minor or left, reason, actor, key, decided)
    else:
        left = _left("order", order_id)
        refund, _ = refund_wallet_order(order_id, amount_minor or left, reason, actor, key, decided)
    return f"request #{request_id} approved: refund #{refund.id} ({refund.status.value})"


def decline(request_id: int, message: str, actor: str) -> str:
    """Decline the request with a message the customer is emailed. Commits."""
    cleaned = _text(message, "message_required")
    request = _waiting(request_id)
    request.status = RefundRequestStatus.DECLINED
    request.decision_message, request.decided_by, request.decided_at = cleaned, actor, utcnow()
    queue_email(EmailKind.REFUND_DECLINED, request.id, customer_id=request.customer_id)
    db.session.commit()
    return f"request #{request_id} declined; the customer is emailed why"


BLANK = " \t\n\r"  # what a reason may be padded with; it must hold something else


def _text(raw: str, code: str) -> str:
    """A person's text: MIN_TEXT to MAX_TEXT characters, not only blanks (the contract
    says the same with minLength, maxLength and a pattern); kept without its padding."""
    text = str(raw)
    if not MIN_TEXT <= len(text) <= MAX_TEXT or not text.strip(BLANK):
        raise UnprocessableError(f"write {MIN_TEXT} to {MAX_TEXT} characters", code=code)
    return text.strip(BLANK)


def _locked(request_id: int) -> RefundRequest:
    request = db.session.scalar(
        select(RefundRequest).where(RefundRequest.id == request_id).with_for_update()
    )
    if request is None:
        db.session.rollback()
        raise NotFoundError(f"no refund request {request_id}", code="refund_request_not_found")
    return request


def _waiting(request_id: int) -> RefundRequest:
    request = _locked(request_id)
    if request.status != RefundRequestStatus.WAITING:
        db.session.rollback()
        raise ConflictError(
            f"request #{request_id} is {request.status.value} already: it was decided once",
            code="refund_request_decided",
        )
    return request


def _charged_payment(order_id: int) -> int | None:
    """The order's charged card payment (None: the order was paid from the wallet)."""
    return db.session.scalar(
        select(Payment.id).where(
            Payment.order_id == order_id, Payment.status == PaymentStatus.SUCCEEDED
        )
    )


def _left(what: str, target_id: int) -> int:
    page = refund_page(what, target_id)
    if page is None or page.blocked or page.left_minor <= 0:
        raise ConflictError(
            f"nothing is left to refund on {what} {target_id}"
            + (f": {page.blocked}" if page and page.blocked else ""),
            code="nothing_to_refund",
        )
    return page.left_minor
