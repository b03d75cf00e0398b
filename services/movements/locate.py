"""Which row of ours an event or answer names, by the one rule every movement kind
follows: our own reference first (Stripe's metadata id, or Braintree's order_id:
our idempotency key), then the provider's id. Not locked (the caller locks in the one
order, services/movements/locks.py)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row, select

from extensions import db
from models import Payment
from models.types import parse_row_id, parse_uuid
from providers.events import ProviderEvent


def find(
    model: Any, provider: str, event: ProviderEvent, provider_id: Any, *columns: Any
) -> Row[Any] | None:
    """`columns` of the `model` row the event names, or None. `provider_id` is the
    model's column of the provider's id. Raises ValueError when the event names a row
    of ours in a form that cannot be one (it is set aside, never retried)."""
    report, noun = event.report, model.__tablename__.rstrip("s")
    condition = None
    if report.our_id is not None:
        row_id = parse_row_id(report.our_id)
        if row_id is None:
            raise ValueError(f"metadata.{noun}_id {report.our_id[:40]!r} is not a {noun} id")
        condition = model.id == row_id
    elif report.reference is not None:
        try:
            condition = model.idempotency_key == parse_uuid(report.reference)
        except ValueError:
            raise ValueError(f"reference {report.reference[:40]!r} is not one of ours") from None
    theirs = provider_id == event.provider_id if event.provider_id else None
    for where in (condition, theirs):
        if where is not None:
            found = db.session.execute(
                select(*columns).where(where, model.provider == provider)
            ).first()
            if found is not None:
                return found
    return None


def parent_payment(provider: str, event: ProviderEvent) -> tuple[int, int | None] | None:
    """(id, order id) of the payment of ours a refund's or dispute's event is about, by
    the provider's id of it (event.parent_payment_id); not locked."""
    if not event.parent_payment_id:
        return None
    found = db.session.execute(
        select(Payment.id, Payment.order_id).where(
            Payment.provider == provider, Payment.provider_payment_id == event.parent_payment_id
        )
    ).first()
    return (found.id, found.order_id) if found is not None else None
