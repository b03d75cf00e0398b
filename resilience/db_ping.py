"""The app's pool asks a connection whether it is alive before lending it, only when the
connection lay idle in the pool for IDLE_PING_S or longer.

SQLAlchemy's `pool_pre_ping` asks before every checkout: one round trip per request and
per job step, about 8% of a web worker's CPU under the customers' load (bench.settle,
py-spy). A connection given back less than a second ago was alive then; one that lay
idle longer (a database restart or failover may have happened meanwhile) is asked, and
a dead one replaced before anyone uses it (the pool's own retry: `DisconnectionError`
from a checkout listener). A connection that died within that second fails its next
statement instead: SQLAlchemy then invalidates it and every older connection of the
pool, and the request answers 503 (blueprints/errors.py) or the job is retried; a
statement that may have committed is decided by its idempotency key, as after any cut
(docs/operations.md).
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.exc import DisconnectionError

IDLE_PING_S = 1.0
_IDLE_SINCE = "idle_since"


def ping_when_idle(engine: Engine) -> None:
    """Ask before lending a connection that lay idle IDLE_PING_S or longer (the dialect's
    own ping, as `pool_pre_ping` asks)."""

    def ping_if_idle(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        idle_since = record.info.pop(_IDLE_SINCE, None)
        if idle_since is None or time.monotonic() - idle_since < IDLE_PING_S:
            return  # new, or back in the pool a moment ago
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:  # whatever the driver raises for a dead connection
            raise DisconnectionError(f"an idle connection was dead: {exc}") from exc

    event.listen(engine, "checkin", _note_idle)
    event.listen(engine, "checkout", ping_if_idle)


def _note_idle(dbapi_connection: Any, record: Any) -> None:
    record.info[_IDLE_SINCE] = time.monotonic()
