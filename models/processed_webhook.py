from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Model
from models.types import UTCDateTime, str_enum, utcnow


class WebhookState(enum.StrEnum):
    """Where a recorded event is. Only `pending` is ever picked up again."""

    PENDING = "pending"  # queued for application, or waiting for its payment to be known
    APPLIED = "applied"  # its effect (or its conflict) is on the payment
    IGNORED = "ignored"  # no effect: a type we do not act on, or older than what was applied
    REJECTED = "rejected"  # could not apply (malformed ids, a failure while applying): set aside


class ProcessedWebhook(Model):
    """A provider event we accepted. UNIQUE(provider, event_id) makes redelivery a no-op."""

    __tablename__ = "processed_webhooks"
    __table_args__ = (
        UniqueConstraint("provider", "event_id"),
        Index("ix_processed_webhooks_event_id", "event_id"),  # the dashboard's search
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    provider: Mapped[str] = mapped_column(String(32))
    event_id: Mapped[str] = mapped_column(String(255))
    event_type: Mapped[str] = mapped_column(String(100))
    state: Mapped[WebhookState] = mapped_column(
        str_enum(WebhookState, "webhook_state"), default=WebhookState.APPLIED, index=True
    )
    payment_id: Mapped[int | None] = mapped_column(ForeignKey("payments.id"), index=True)
    # Why the event had the effect it had (ignored as older, conflict, unknown type).
    note: Mapped[str] = mapped_column(String(500), default="")
    payload: Mapped[dict] = mapped_column(JSON)
    event_created_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    received_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    processed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
