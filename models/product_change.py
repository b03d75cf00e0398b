from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Model
from models.types import UTCDateTime, utcnow


class ProductChange(Model):
    """The catalog's audit trail: who changed which product how, never updated."""

    __tablename__ = "product_changes"

    id: Mapped[int] = mapped_column(primary_key=True)
    product_id: Mapped[int] = mapped_column(ForeignKey("products.id"), index=True)
    action: Mapped[str] = mapped_column(String(16))  # created | edited | retired | restored
    actor: Mapped[str] = mapped_column(String(254))  # the admin's email
    changes: Mapped[str] = mapped_column(Text)  # JSON: {field: [before, after]}
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
