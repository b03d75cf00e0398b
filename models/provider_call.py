from __future__ import annotations

from datetime import datetime

from sqlalchemy import Float, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Model
from models.types import UTCDateTime


class ProviderCall(Model):
    """The call log: every request the gateway made, written after the call (never while
    a transaction is open around it). Kept CALL_LOG_RETENTION_DAYS."""

    __tablename__ = "provider_calls"
    __table_args__ = (Index("ix_provider_calls_subject_id_started_at", "subject_id", "started_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    provider: Mapped[str] = mapped_column(String(32))
    operation: Mapped[str] = mapped_column(String(32))
    # The row the call is about: its movement kind ("charge", "refund") and id (no FK:
    # the log outlives nothing); none for a call about no row (a backfill, an email).
    subject_kind: Mapped[str | None] = mapped_column(String(16))
    subject_id: Mapped[int | None] = mapped_column()
    idempotency_key: Mapped[str | None] = mapped_column(String(100))
    attempt: Mapped[int | None] = mapped_column()
    started_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    duration_ms: Mapped[float] = mapped_column(Float)
    outcome: Mapped[str] = mapped_column(String(32))
    http_status: Mapped[int | None] = mapped_column()
    endpoint: Mapped[str | None] = mapped_column(String(200))
    request_id: Mapped[str | None] = mapped_column(String(100))
    error: Mapped[str | None] = mapped_column(String(500))
