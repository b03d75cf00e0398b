"""Whether a row is locked, probed from a second connection with NOWAIT."""

from __future__ import annotations

from sqlalchemy import Engine, text
from sqlalchemy.exc import OperationalError


def is_held(engine: Engine, table: str, row_id: int) -> bool:
    """True when another transaction holds the row (FOR UPDATE NOWAIT fails at once)."""
    with engine.connect() as conn:
        try:
            conn.execute(
                text(f"SELECT id FROM {table} WHERE id = :id FOR UPDATE NOWAIT"), {"id": row_id}
            )
        except OperationalError:
            return True
        return False


def lock_waiters(engine: Engine) -> int:
    """How many other backends of this database wait for a lock right now."""
    with engine.connect() as conn:
        return int(
            conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
                )
            ).scalar_one()
        )
