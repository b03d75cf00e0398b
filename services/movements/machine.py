"""The one state machine of every movement kind (payment, refund, dispute), driven by
the kind's table: data, like Kill Bill's PaymentStates.xml. What a move does to the
world (an order paid, a wallet credited) is the kind's own effect, applied by its
caller after `step` says the status changed.

The rules, the same for every kind: a move not in the table is ignored (an older or
repeated report never takes a row backwards); two different final reports conflict
and the row goes to review; a row in review records what it is told but only an admin
moves it out; a reversal the table allows (a refund that failed after it succeeded) is
the provider's word only, and an older report never undoes it.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sqlalchemy import event, select
from sqlalchemy.orm import Session

from extensions import db
from models import TransitionSource

log = logging.getLogger(__name__)
S = TypeVar("S", bound=enum.Enum)
PROVIDER_SOURCES = (TransitionSource.WEBHOOK, TransitionSource.RECONCILE)
STEP_LINE = "%s %s (%s): %s -> %s by %s: %s"


@dataclass(frozen=True)
class Table(Generic[S]):
    """A kind's states as data."""

    noun: str  # "payment", "refund", "dispute": in logs and reasons
    transitions: Mapping[S, frozenset[S]]
    final: frozenset[S]  # a different final report conflicts (review)
    review: S
    record: Any  # the audit model (PaymentTransition, ...)
    owner: str  # its column naming the row ("payment_id")
    # final -> final moves that only the provider's word makes (succeeded -> failed)
    reversals: frozenset[tuple[S, S]] = frozenset()
    describe: Callable[[Any], str] = field(default=lambda row: "")
    context: Callable[[Any], dict[str, object]] = field(default=lambda row: {})


@dataclass(frozen=True)
class Step(Generic[S]):
    was: S
    to: S
    is_reversal: bool
    reason: str


def step(
    table: Table[S],
    row: Any,
    to: S,
    *,
    source: TransitionSource,
    reason: str = "",
    actor: str | None = None,
) -> Step[S] | None:
    """Move a locked row to `to` (or to review, on a conflict) and record why, in the
    caller's transaction; the Step taken, or None when the status stays."""
    taken = decide(table, row, to, source=source, reason=reason, actor=actor)
    if taken is not None:
        take(table, row, taken, source=source, actor=actor)
    return taken


def decide(
    table: Table[S],
    row: Any,
    to: S,
    *,
    source: TransitionSource,
    reason: str = "",
    actor: str | None = None,
    may_reverse: bool = False,
) -> Step[S] | None:
    """The step the rules allow a locked row towards `to`, not taken yet (`take` takes
    it; a kind whose step writes more in one statement takes it itself); None when the
    status stays (a row in review records what it was told). `may_reverse`: the
    provider's report takes back the final state it reported (Braintree's settlement
    declined after a success), a reversal the table does not list for every report."""
    current = row.status
    if to == current:
        return None
    if current == table.review and source != TransitionSource.ADMIN:
        record(table, row, current, current, source, f"reported {to.value}: {reason}", actor)
        return None
    is_listed = (current, to) in table.reversals or (may_reverse and current in table.final)
    is_reversal = is_listed and source in PROVIDER_SOURCES
    if is_reversal:
        reason = f"{to.value} after it had {current.value}: {reason}"
    elif (to, current) in table.reversals and _was_reversed(table, row, to, current):
        # The provider's reversals are one-way: a report of the earlier state was
        # written before the reversal and arrived after it.
        log.info("%s %s: ignored a stale %s report (%s)", table.noun, row.id, to.value, reason)
        return None
    elif current in table.final and to in table.final:
        reason = (
            f"conflict: {table.noun} was {current.value}, {source.value} reports {to.value}: "
            f"{reason}"
        )
        to = table.review
    elif to not in table.transitions[current]:
        log.info(
            "%s %s: ignored %s -> %s from %s (%s)",
            table.noun,
            row.id,
            current.value,
            to.value,
            source.value,
            reason,
        )
        return None
    return Step(current, to, is_reversal, reason)


def take(
    table: Table[S], row: Any, taken: Step[S], *, source: TransitionSource, actor: str | None
) -> None:
    """Write a decided step: the status, its record, its log line after the commit."""
    row.status = taken.to
    record(table, row, taken.was, taken.to, source, taken.reason, actor)
    log_step(table, row, taken.was, taken.to, source, taken.reason, is_committed=False)


def log_step(
    table: Table[S],
    row: Any,
    was: S,
    to: S,
    source: TransitionSource,
    reason: str,
    *,
    is_committed: bool = True,
) -> None:
    """The log line of a move: now for one committed already (a lean path's statement),
    else once the session's transaction commits."""
    args = (table.noun, row.id, table.describe(row), was.value, to.value, source.value, reason)
    if is_committed:
        log.info(STEP_LINE, *args, extra=table.context(row))
    else:
        log_after_commit(STEP_LINE, *args, extra=table.context(row))


def moved_note(table: Table[S], row: Any, was: S, is_moved: bool) -> str:
    """What applying an event did to a row, for the event's record."""
    if is_moved:
        return f"{table.noun} {row.id}: {was.value} -> {row.status.value}"
    return f"no change: {table.noun} {row.id} was {was.value}"


def record(
    table: Table[S],
    row: Any,
    from_status: S | None,
    to: S,
    source: TransitionSource,
    reason: str,
    actor: str | None,
) -> None:
    """One row of the kind's audit trail (a creation has no from_status)."""
    db.session.add(
        table.record(
            **{table.owner: row.id},
            from_status=from_status,
            to_status=to,
            source=source,
            reason=reason[:500],
            actor=actor,
        )
    )


def _was_reversed(table: Table[S], row: Any, before: S, after: S) -> bool:
    model = table.record
    return (
        db.session.scalar(
            select(model.id)
            .where(
                getattr(model, table.owner) == row.id,
                model.from_status == before,
                model.to_status == after,
            )
            .limit(1)
        )
        is not None
    )


_PENDING_LOGS = "movements.pending_logs"


def log_after_commit(message: str, *args: object, extra: dict[str, Any] | None = None) -> None:
    """Log a line about the session's transaction once it has committed (never before:
    a line for a change that is then rolled back would be a lie in the audit trail)."""
    db.session.info.setdefault(_PENDING_LOGS, []).append((message, args, extra))


@event.listens_for(Session, "after_commit")
def _emit_pending_logs(session: Session) -> None:
    for message, args, extra in session.info.pop(_PENDING_LOGS, []):
        log.info(message, *args, extra=extra)


@event.listens_for(Session, "after_rollback")
def _drop_pending_logs(session: Session) -> None:
    session.info.pop(_PENDING_LOGS, None)
