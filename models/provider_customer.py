from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Model
from models.types import UTCDateTime, utcnow


class ProviderCustomer(Model):
    """A shop customer as a provider knows them (a Stripe Customer): the payments sent
    with it name it, so a lookup lists only that customer's intents (one short page in
    a busy shop). One per customer and provider."""

    __tablename__ = "provider_customers"
    __table_args__ = (UniqueConstraint("customer_id", "provider"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id"))
    provider: Mapped[str] = mapped_column(String(32))
    provider_customer_id: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
