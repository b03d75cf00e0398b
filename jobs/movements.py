"""RQ entry points of every movement kind (services/movements/kinds.py): take the kind's
name and a row id, re-read state, safe to run twice."""

from __future__ import annotations

# The kinds, registered by their declarations (a job finds its kind by name).
import services.payments.kind
import services.refunds.kind  # noqa: F401
from jobs.throttled import throttled
from services.movements import engine, janitor, kinds


@throttled
def send_job(kind: str, row_id: int) -> None:
    engine.send(kinds.named(kind), row_id)


@throttled
def look_up_job(kind: str, row_id: int) -> None:
    engine.look_up(kinds.named(kind), row_id)


def sweep_job() -> int:
    """The janitor of every kind: lost sends and due lookups enqueued again."""
    return janitor.sweep()
