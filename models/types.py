"""Column types shared by the models."""

from __future__ import annotations

import enum
import re
import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, Enum
from sqlalchemy.types import TypeDecorator

# Primary keys are PostgreSQL `integer`s: an id from outside (a URL, a webhook's
# metadata) beyond this names no row, and must not reach the database (DataError).
MAX_ROW_ID = 2**31 - 1


def parse_row_id(raw: object) -> int | None:
    """A row id from untrusted text: digits only, 1..MAX_ROW_ID; None for anything else."""
    if not isinstance(raw, str) or not raw.isascii() or not raw.isdigit() or len(raw) > 10:
        return None
    value = int(raw)
    return value if 1 <= value <= MAX_ROW_ID else None


# The one form of an idempotency key we accept: 8-4-4-4-12 hex digits (either case).
# uuid.UUID also takes braces, "urn:uuid:", no hyphens or hyphens anywhere: two texts
# would then name one key, and a client could not tell which of its keys we kept.
UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def parse_uuid(raw: object) -> uuid.UUID:
    """A UUID from untrusted text, in its canonical form only (surrounding spaces are
    ignored); ValueError for anything else."""
    text = raw.strip() if isinstance(raw, str) else ""
    if not UUID_RE.fullmatch(text):
        raise ValueError("not a UUID in its canonical form (8-4-4-4-12 hex digits)")
    return uuid.UUID(text)


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC (a callable default, never evaluated at import)."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp that is always timezone-aware UTC in Python.

    PostgreSQL stores `timestamptz`; values are bound as UTC and come back aware
    (a naive value read from a raw query is taken as UTC).
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column; use models.types.utcnow()")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        return None if value is None else as_utc(value)


def as_utc(value: datetime) -> datetime:
    """A timestamp read from PostgreSQL as the app holds it: aware, in UTC (naive: UTC)."""
    return value.astimezone(UTC) if value.tzinfo is not None else value.replace(tzinfo=UTC)


def str_enum(enum_cls: type[enum.Enum], name: str, length: int = 16) -> Enum:
    """A str Enum stored as VARCHAR with a named CHECK of its values (portable, no native type)."""
    return Enum(
        enum_cls,
        name=name,
        native_enum=False,
        create_constraint=True,
        length=length,
        values_callable=lambda members: [m.value for m in members],
    )
