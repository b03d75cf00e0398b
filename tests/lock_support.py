"""The database as other sessions see it: whether a row is locked (probed from a second
connection with NOWAIT), who waits for a lock, and every other connection dropped."""

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


def drop_other_connections(engine: Engine) -> int:
    """Terminate every other connection of this role (the app's) to this database, as a
    restart does to a pool (every worker of the suite has a cluster of its own); how many
    there were. Each
    backend is waited for until it has exited (up to 5 s), so the drop is complete when
    this returns."""
    with engine.connect() as conn:
        killed = conn.execute(
            text(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) "
                "FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid() AND datname = current_database() "
                "AND usename = current_user"
            )
        ).scalar_one()
        conn.commit()
    return int(killed)
