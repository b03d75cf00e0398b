from __future__ import annotations

from datetime import datetime

from sqlalchemy import Float, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db
from models.types import UTCDateTime


class ProviderCall(db.Model):  # type: ignore[name-defined]
    """The call log: every request the gateway made, written after the call (never while
    a transaction is open around it). Kept CALL_LOG_RETENTION_DAYS."""

    __tablename__ = "provider_calls"
    __table_args__ = (Index("ix_provider_calls_payment_id_started_at", "payment_id", "started_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    provider: Mapped[str] = mapped_column(String(32))
    operation: Mapped[str] = mapped_column(String(32))
    payment_id: Mapped[int | None] = mapped_column()  # no FK: the log outlives nothing
    idempotency_key: Mapped[str | None] = mapped_column(String(100))
    attempt: Mapped[int | None] = mapped_column()
    started_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    duration_ms: Mapped[float] = mapped_column(Float)
    outcome: Mapped[str] = mapped_column(String(32))
    http_status: Mapped[int | None] = mapped_column()
    endpoint: Mapped[str | None] = mapped_column(String(200))
    request_id: Mapped[str | None] = mapped_column(String(100))
    error: Mapped[str | None] = mapped_column(String(500))
