"""JSON shapes of domain objects for the API (one place, shared by every endpoint)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from extensions import db
from models import Order, Payment, PaymentStatus, PaymentTransition, TransitionSource
from services.wallet import Movement


def payment_json(payment: Payment, *, with_transitions: bool = True) -> dict[str, Any]:
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
    if with_transitions:
        transitions = db.session.scalars(
            select(PaymentTransition)
            .where(PaymentTransition.payment_id == payment.id)
            .order_by(PaymentTransition.id)
        ).all()
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


def next_action(payment: Payment) -> dict[str, str] | None:
    if payment.status != PaymentStatus.REQUIRES_ACTION or not payment.action_url:
        return None
    return {"type": "redirect_to_url", "url": payment.action_url}


ADMIN_DECISION = "decided by our payments team"


def customer_reason(transition: PaymentTransition) -> str:
    """What a customer may read of a transition: never an admin's free text (it is
    written for colleagues and may name other customers or internal facts)."""
    if transition.source == TransitionSource.ADMIN:
        return ADMIN_DECISION
    return transition.reason


def order_json(order: Order) -> dict[str, Any]:
    return {
        "id": order.id,
        "status": order.status.value,
        "total_minor": order.total_minor,
        "currency": order.currency,
        "lines": [
            {
                "sku": line.product.sku,
                "quantity": line.quantity,
                "unit_price_minor": line.unit_price_minor,
                "line_total_minor": line.line_total_minor,
            }
            for line in order.lines
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
