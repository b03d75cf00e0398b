"""Alerts to the on-call admins: one row per condition worth waking someone for, UNIQUE
by what it is about (a breaker's opening, an hour of unknown payments piling up), so a
condition seen again and again sends one email."""

from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Model
from models.types import UTCDateTime, str_enum, utcnow


class AlertKind(enum.StrEnum):
    BREAKER_OPEN = "breaker_open"  # a provider's (or SMTP's) circuit opened
    BREAKER_FORCED = "breaker_forced"  # an admin forced a breaker open
    PROVIDER_KEY = "provider_key"  # a provider refuses our key (401/403)
    INVALID_REQUEST = "invalid_request"  # a provider refuses our request's shape (400)
    CARD_TESTING = "card_testing"  # declines from one customer or address passed the limit
    UNKNOWN_PAYMENTS = "unknown_payments"  # unknown payments past a count or an age
    EMAILS_FAILING = "emails_failing"  # emails failed for good
    BOOKS_UNRECONCILED = "books_unreconciled"  # a day's books differ from the provider's


class Alert(Model):
    __tablename__ = "alerts"

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[AlertKind] = mapped_column(str_enum(AlertKind, "alert_kind", length=24))
    # What makes it one alert ("breaker:stripe:open:12"): a repeat inserts nothing.
    dedupe_key: Mapped[str] = mapped_column(String(200), unique=True)
    detail: Mapped[str] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
