"""The email outbox: one row per email and cause, written in the cause's transaction."""

from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Model
from models.types import UTCDateTime, str_enum, utcnow


class EmailKind(enum.StrEnum):
    """What an email is about; with the subject's id, what makes it one email."""

    WELCOME = "welcome"  # subject: customer
    RECEIPT = "receipt"  # subject: payment (order or top-up succeeded)
    WALLET_RECEIPT = "wallet_receipt"  # subject: order paid from the wallet
    PAYMENT_FAILED = "payment_failed"  # subject: payment
    REFUND = "refund"  # subject: refund (succeeded)
    REFUND_FAILED = "refund_failed"  # subject: refund (failed after it had succeeded)
    REFUND_DECLINED = "refund_declined"  # subject: refund request (declined, with why)
    REVIEW_ALERT = "review_alert"  # subject: payment (entered needs_review), to the admins
    # subject: refund (entered needs_review, or failed after it had succeeded), to the admins
    REFUND_ALERT = "refund_alert"
    DISPUTE_ALERT = "dispute_alert"  # subject: dispute (opened), to the admins
    OPS_ALERT = "ops_alert"  # subject: alert (a breaker opened, ...), to the admins


class OutboxStatus(enum.StrEnum):
    PENDING = "pending"  # not accepted by the SMTP server yet: a job or the sweep sends it
    SENT = "sent"  # accepted by the SMTP server
    FAILED = "failed"  # refused for good, or out of attempts: the reason is in last_error


class OutboxMessage(Model):
    """An email to send, at least once: a crash never loses it (the row commits with its
    cause), a repeat of the cause never writes a second row (UNIQUE kind + subject)."""

    __tablename__ = "outbox"
    __table_args__ = (
        UniqueConstraint("kind", "subject_id"),
        Index("ix_outbox_status_next_attempt_at", "status", "next_attempt_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[EmailKind] = mapped_column(str_enum(EmailKind, "email_kind", length=24))
    subject_id: Mapped[int] = mapped_column()
    recipient: Mapped[str] = mapped_column(String(254))
    status: Mapped[OutboxStatus] = mapped_column(
        str_enum(OutboxStatus, "outbox_status"), default=OutboxStatus.PENDING
    )
    attempts: Mapped[int] = mapped_column(default=0)
    last_error: Mapped[str | None] = mapped_column(String(500))
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # Indexed: the retention job deletes sent emails by age (services/platform/retention.py).
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)
