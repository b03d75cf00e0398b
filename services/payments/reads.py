"""JSON shapes of domain objects for the API (one place, shared by every endpoint)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select

from extensions import db
from models import (
    Order,
    Payment,
    PaymentStatus,
    PaymentTransition,
    Refund,
    RefundRequest,
    RefundStatus,
    TransitionSource,
)
from services.payments.intake import NewPayment, NewTransition
from services.payments.lean_read import ReadPayment, ReadTransition
from services.payments.ordering import NewLine, NewOrder
from services.payments.table import DECLINED_PREFIX
from services.platform.retention import transitions_of
from services.wallet.ledger import Movement


def payment_json(
    payment: Payment | NewPayment | ReadPayment,
    *,
    with_transitions: bool = True,
    refunds: Sequence[Refund] | None = None,
    transitions: Sequence[PaymentTransition | NewTransition | ReadTransition] | None = None,
) -> dict[str, Any]:
    """The payment as the API shows it; `refunds` and `transitions` when the caller has
    them already (a payment the lean intake just created has none and one; the lean
    read's, none and its own), else read here."""
    body: dict[str, Any] = {
        "id": payment.id,
        "status": payment.status.value,
        "is_final": payment.status.is_final,
        "purpose": payment.purpose.value,
        "order_id": payment.order_id,
        "wallet_id": payment.wallet_id,
        "provider": payment.provider,
        "amount_minor": payment.amount_minor,
        "currency": payment.currency,
        "idempotency_key": str(payment.idempotency_key),
        "provider_payment_id": payment.provider_payment_id,
        "decline_code": payment.decline_code,
        "payment_method": payment.payment_method,
        # While the payment requires action: where the customer authenticates (3-D Secure).
        "next_action": next_action(payment),
        "created_at": payment.created_at.isoformat(),
        "updated_at": payment.updated_at.isoformat(),
    }
    if refunds is None:
        refunds = refunds_of(payment_id=payment.id)
    body["refunds"] = [refund_json(r) for r in refunds]
    body["refunded_minor"] = refunded_minor(refunds)
    if with_transitions:
        if transitions is None:
            transitions = transitions_of(payment.id)
        body["transitions"] = [
            {
                "from": t.from_status.value if t.from_status else None,
                "to": t.to_status.value,
                "source": t.source.value,
                "reason": customer_reason(t),
                "at": t.created_at.isoformat(),
            }
            for t in transitions
        ]
    return body


def next_action(payment: Payment | NewPayment | ReadPayment) -> dict[str, str] | None:
    if payment.status != PaymentStatus.REQUIRES_ACTION or not payment.action_url:
        return None
    return {"type": "redirect_to_url", "url": payment.action_url}


ADMIN_DECISION = "decided by our payments team"
IN_REVIEW = "being checked by our payments team"
# A failure that is not the bank's decline (a provider's error an operator resolved, a
# payment the provider has no record of): never called a decline.
NOT_COMPLETED = "the payment could not be completed; nothing was charged"


def customer_reason(transition: PaymentTransition | NewTransition | ReadTransition) -> str:
    """What a customer may read of a transition: never an admin's free text (it is
    written for colleagues and may name other customers or internal facts), nor why a
    payment went to review (a provider's answer, another payment, our own lookups)."""
    if (
        transition.to_status == PaymentStatus.FAILED
        and transition.source != TransitionSource.WEBHOOK  # the provider's own word
        and not transition.reason.startswith(DECLINED_PREFIX)
    ):
        return NOT_COMPLETED
    if transition.source == TransitionSource.ADMIN:
        return ADMIN_DECISION
    if transition.to_status == PaymentStatus.NEEDS_REVIEW:
        return IN_REVIEW
    return transition.reason


def refunds_of(*, payment_id: int | None = None, order_id: int | None = None) -> list[Refund]:
    where = (
        Refund.payment_id == payment_id if payment_id is not None else Refund.order_id == order_id
    )
    return list(db.session.scalars(select(Refund).where(where).order_by(Refund.id)))


def refunded_minor(refunds: Sequence[Refund]) -> int:
    return sum(r.amount_minor for r in refunds if r.status == RefundStatus.SUCCEEDED)


def refund_json(refund: Refund) -> dict[str, Any]:
    """A refund as its customer may see it (the admin's reason stays internal)."""
    return {
        "id": refund.id,
        "status": refund.status.value,
        "amount_minor": refund.amount_minor,
        "currency": refund.currency,
        "to": "wallet" if refund.provider == "wallet" or refund.payment_id is None else "card",
        "created_at": refund.created_at.isoformat(),
        "updated_at": refund.updated_at.isoformat(),
    }


def order_json(order: Order) -> dict[str, Any]:
    lines = [
        NewLine(line.product.sku, line.quantity, line.unit_price_minor, line.line_total_minor)
        for line in order.lines
    ]
    return _order_body(order, lines, refunds_of(order_id=order.id))


def new_order_json(order: NewOrder) -> dict[str, Any]:
    """`order_json` of an order just created, from what its statement wrote."""
    return _order_body(order, order.lines, [])


def _order_body(
    order: Order | NewOrder, lines: Sequence[NewLine], refunds: Sequence[Refund]
) -> dict[str, Any]:
    return {
        "id": order.id,
        "status": order.status.value,
        "total_minor": order.total_minor,
        "currency": order.currency,
        "refunds": [refund_json(r) for r in refunds],
        "refunded_minor": refunded_minor(refunds),
        "lines": [
            {
                "sku": line.sku,
                "quantity": line.quantity,
                "unit_price_minor": line.unit_price_minor,
                "line_total_minor": line.line_total_minor,
            }
            for line in lines
        ],
        "created_at": order.created_at.isoformat(),
    }


def movement_json(movement: Movement) -> dict[str, Any]:
    return {
        "operation_id": movement.operation_id,
        "wallet_id": movement.wallet_id,
        "entry_id": movement.entry_id,
        "amount_minor": movement.amount_minor,
        "balance_after_minor": movement.balance_after_minor,
    }


def refund_request_json(request: RefundRequest) -> dict[str, Any]:
    return {
        "id": request.id,
        "order_id": request.order_id,
        "status": request.status.value,
        "reason": request.reason,
        "refund_id": request.refund_id,
        "decision_message": request.decision_message,
        "created_at": request.created_at.isoformat(),
        "decided_at": request.decided_at.isoformat() if request.decided_at else None,
    }
