from __future__ import annotations

from datetime import datetime

from flask_login import UserMixin
from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Model
from models.types import UTCDateTime, utcnow


class Customer(UserMixin, Model):
    """A person who buys. Logs in to the pages with a password, to the API with a token."""

    __tablename__ = "customers"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    # SHA-256 of the bearer token; the token itself is shown once and never stored.
    api_token_hash: Mapped[str | None] = mapped_column(String(64), unique=True)
    # Part of every session's identity: logging out bumps it, so a copied or replayed
    # cookie (session or remember-me) of that account stops working everywhere.
    session_version: Mapped[int] = mapped_column(default=0, server_default="0")
    # The language the customer last chose or browsed in: their emails are written in it.
    locale: Mapped[str] = mapped_column(String(8), default="en", server_default="en")
    # Card testing: the customer's declines passed the limit (services/payments/attempts.py),
    # so new payments are refused (429) until then. None: not blocked.
    payments_blocked_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # The latest card decline of the customer's payments: the charge job reads a new
    # card's fingerprint first only for a customer declined within the window.
    last_declined_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    def get_id(self) -> str:
        # Prefixed so a customer session can never be read as an admin session.
        return f"customer:{self.id}:{self.session_version}"
