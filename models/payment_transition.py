from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Model
from models.payment import PaymentStatus
from models.types import UTCDateTime, str_enum, utcnow


class TransitionSource(enum.StrEnum):
    """Who moved the payment."""

    CHECKOUT = "checkout"
    CHARGE = "charge"  # the charge job sent the payment
    REFUND = "refund"  # the refund job sent the refund
    RECONCILE = "reconcile"
    WEBHOOK = "webhook"
    ADMIN = "admin"


class PaymentTransition(Model):
    """The audit trail: one row for every status change of a payment, never updated."""

    __tablename__ = "payment_transitions"

    id: Mapped[int] = mapped_column(primary_key=True)
    payment_id: Mapped[int] = mapped_column(ForeignKey("payments.id"), index=True)
    from_status: Mapped[PaymentStatus | None] = mapped_column(
        str_enum(PaymentStatus, "transition_from_status")
    )
    to_status: Mapped[PaymentStatus] = mapped_column(
        str_enum(PaymentStatus, "transition_to_status")
    )
    source: Mapped[TransitionSource] = mapped_column(
        str_enum(TransitionSource, "transition_source")
    )
    reason: Mapped[str] = mapped_column(String(500), default="")
    # Who acted, for admin moves (the admin's email) and provider events (event id).
    actor: Mapped[str | None] = mapped_column(String(254))
    # Indexed: the overview's chart reads the last hour, however long the history.
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)


class ArchivedTransition(Model):
    """A transition of a payment final for longer than RETENTION_DAYS, moved out of the
    hot table by the retention job (services/platform/retention.py); the same columns, read when
    a payment has no transition left in the hot table."""

    __tablename__ = "payment_transitions_archive"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    payment_id: Mapped[int] = mapped_column(ForeignKey("payments.id"), index=True)
    from_status: Mapped[PaymentStatus | None] = mapped_column(
        str_enum(PaymentStatus, "archived_from_status")
    )
    to_status: Mapped[PaymentStatus] = mapped_column(str_enum(PaymentStatus, "archived_to_status"))
    source: Mapped[TransitionSource] = mapped_column(str_enum(TransitionSource, "archived_source"))
    reason: Mapped[str] = mapped_column(String(500))
    actor: Mapped[str | None] = mapped_column(String(254))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
