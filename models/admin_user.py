from __future__ import annotations

import enum
from datetime import datetime

from flask_login import UserMixin
from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Model
from models.types import UTCDateTime, str_enum, utcnow


class AdminRole(enum.StrEnum):
    """What an operator of the dashboard may do; every role reads everything."""

    VIEWER = "viewer"  # reads
    OPERATOR = "operator"  # breakers, reconcile, decisions of payments and refunds in review
    REFUNDER = "refunder"  # refunds
    ADMIN = "admin"  # all of it, and the catalog


class AdminUser(UserMixin, Model):
    """An operator of the dashboard; never a customer."""

    __tablename__ = "admin_users"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    last_login_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # Stored in the admin's session; logging out bumps it, so an old cookie is refused.
    session_version: Mapped[int] = mapped_column(default=0, server_default="0")
    role: Mapped[AdminRole] = mapped_column(
        str_enum(AdminRole, "admin_role"), default=AdminRole.ADMIN, server_default="admin"
    )

    # Where the admin reads the console's times (an IANA name; UTC until they choose).
    time_zone: Mapped[str] = mapped_column(String(64), default="UTC", server_default="UTC")

    def get_id(self) -> str:
        return f"admin:{self.id}"
