"""A shop customer as each provider knows them (a Stripe Customer), made once, by the send
of the customer's first payment at that provider, before the payment goes out (services/
payments/kind.py): every payment sent with it names it, so its lookup lists only that
customer's intents (one short page, however busy the shop). A payment sent when the
provider could not make it goes without one, and its lookup reads the wider window."""

from __future__ import annotations

import logging

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from extensions import db
from models import ProviderCustomer
from resilience.gateway import CallContext
from services.platform.provider_clients import gateway_for, provider_for

log = logging.getLogger(__name__)


def can_have(provider: str) -> bool:
    """Whether the provider keeps customers of its own."""
    return hasattr(provider_for(provider), "create_customer")


def create(customer_id: int, provider: str) -> str | None:
    """The provider's id of the customer, made there if it has none; None when the
    provider could not be asked now (the next payment asks again). Commits."""
    made = db.session.scalar(
        select(ProviderCustomer.provider_customer_id).where(
            ProviderCustomer.customer_id == customer_id, ProviderCustomer.provider == provider
        )
    )
    db.session.rollback()  # no transaction stays open around the call
    client = provider_for(provider)
    if made is not None or not hasattr(client, "create_customer"):
        return made
    context = CallContext("customer", None, f"customer-{customer_id}")
    # Beside the payment: never the breaker's verdict (it may answer while charges hang).
    answer = gateway_for(provider).call(
        context, lambda: client.create_customer(customer_id), counts=False
    )
    if not isinstance(answer, str):
        log.warning("provider %s did not make customer %s: %s", provider, customer_id, answer)
        return None
    db.session.execute(
        pg_insert(ProviderCustomer)
        .values(customer_id=customer_id, provider=provider, provider_customer_id=answer)
        .on_conflict_do_nothing(index_elements=["customer_id", "provider"])
    )
    db.session.commit()
    return answer
