"""The one skeleton every movement kind runs (services/movements/kinds.py): its send and
its lookup, each safe to run twice or concurrently on any host.

Each is three steps, each committed, so a crash at any point leaves a state the
janitor (services/movements/janitor.py) recovers from:
  1. claim: one conditional UPDATE takes the row's lease if it is in the states asked
     for and nobody holds it, and for a send records "may have been sent" (first and
     last send, the send count), returning what the request needs;
  2. call the provider through its gateway (breaker, timeout, metrics), no transaction
     open and no connection held;
  3. apply the answer to the row locked in the one lock order, through the kind's state
     machine, release the lease, commit, then enqueue what follows.
A lookup replays the create while the provider keeps the key (a send: services/
movements/replays.py), else reads the provider's records; a key-less provider's
movement it has no record of is sent again.

A key-less provider (Braintree) may act twice on a request sent twice, so every send of
a row whose request may have left before is preceded by a lookup (`send_once`): only a
proven absence lets the create go out again (DESIGN 19), on every path, for every kind.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from extensions import db
from models.types import utcnow
from providers.base import Provider
from providers.outcomes import Absent, NotSent, Succeeded
from resilience.gateway import CallContext, CallRecord
from services.movements import lifecycle, replays
from services.movements.kinds import Kind
from services.platform import autocommit, call_log
from services.platform.provider_clients import gateway_for, provider_for

# The claim of every kind. {table}, {statuses}, {mark} and the kind's own {claim_set}
# and {returning} are the kind's declaration, never client text.
_CLAIM = """
UPDATE {table} AS p SET lease_expires_at = :lease, updated_at = :now{mark}{claim_set}
FROM {table} AS before
WHERE p.id = :row_id AND before.id = p.id AND p.status IN ({statuses})
    AND (p.lease_expires_at IS NULL OR p.lease_expires_at < :now)
RETURNING {returning}, before.first_sent_at AS previous_sent_at,
    before.last_sent_at AS previous_last_sent_at
"""
_MARK = """, first_sent_at = COALESCE(p.first_sent_at, :now), last_sent_at = :now,
    send_count = p.send_count + 1"""


@dataclass(frozen=True)
class Claimed:
    """A row whose lease we took (for a send: marked as sent)."""

    row: autocommit.Record  # its columns after the claim, and before it (previous_*)
    lease: datetime


@functools.cache
def _claim_statement(kind: Kind, statuses: tuple[Any, ...], is_send: bool) -> autocommit.Plain:
    return autocommit.plain(
        _CLAIM.format(
            table=kind.model.__tablename__,
            statuses=", ".join(f"'{status.value}'" for status in statuses),
            mark=_MARK if is_send else "",
            claim_set=kind.claim_set if is_send else "",
            returning=kind.claim_returning if is_send else "p.id",
        )
    )


def claim(
    kind: Kind,
    row_id: int,
    now: datetime,
    *,
    is_send: bool = False,
    statuses: tuple[Any, ...] | None = None,
) -> Claimed | None:
    """Take the row's lease (a send: from `kind.pending`, marked as sent; else from
    `statuses`, by default `kind.looked_up`), in one statement of its own transaction;
    None when the row is elsewhere or leased. Raises autocommit.ConnectionLost when the
    database dropped the connection twice (the lease may be ours: its expiry and the
    janitor recover it)."""
    statuses = (kind.pending,) if is_send else (statuses or kind.looked_up)
    lease = lifecycle.lease_until(now)
    params = {"row_id": row_id, "lease": lease, "now": now}
    # Dropped once: once more. If the first did commit, the lease is ours and this
    # claims nothing: its expiry and the janitor recover the row.
    row = autocommit.first_row_retried(_claim_statement(kind, statuses, is_send), params)
    return None if row is None else Claimed(row, lease)


def _claim_or_none(kind: Kind, row_id: int, *, is_send: bool) -> Claimed | None:
    """The job's claim; None also when the database dropped the connection twice (the
    lease may be ours: its expiry and the janitor recover the row)."""
    try:
        return claim(kind, row_id, utcnow(), is_send=is_send)
    except autocommit.ConnectionLost:
        return None


def send(kind: Kind, row_id: int) -> None:
    """Send a pending row to its provider once; returns early if it is not pending or
    is leased."""
    claimed = _claim_or_none(kind, row_id, is_send=True)
    if claimed is None:
        return
    try:
        row = claimed.row
        if kind.before_send is not None:
            row = kind.before_send(row)
            if row is None:
                return  # the kind settled the row without sending it
            if isinstance(row, NotSent):  # the kind holds it back: sent later
                locked = release(kind, row_id)
                follow_up = _not_sent(kind, locked, claimed.row, row)
                db.session.commit()
                follow_up()
                return
        _send_claimed(kind, claimed, row)
    finally:
        if kind.after_send is not None:
            kind.after_send(claimed.row)


def _send_claimed(kind: Kind, claimed: Claimed, row: Any) -> None:
    """The call, and its answer applied to the row locked (committed), then what follows."""
    request = kind.request_for(row, row.previous_sent_at)
    provider = provider_for(row.provider)
    calls: list[CallRecord] = []
    outcome = gateway_for(row.provider).call(
        CallContext(kind.name, row.id, str(row.idempotency_key), row.send_count, kind.name),
        lambda: send_once(kind, provider, request, row.previous_sent_at),
        recorder=calls.append,
    )
    if kind.settle is not None and isinstance(outcome, Succeeded):
        if kind.settle(claimed, outcome, calls):
            return  # (settle writes the call's row either way)
    else:
        call_log.write_all(calls)
    locked = release(kind, row.id)
    replays.note_clock(locked, calls[-1].clock_offset_s if calls else None)
    if isinstance(outcome, NotSent):
        follow_up = _not_sent(kind, locked, row, outcome)
    else:
        follow_up = kind.apply(kind, locked, outcome, kind.send_source, row.previous_sent_at)
    db.session.commit()
    follow_up()


def send_once(
    kind: Kind, provider: Provider, request: Any, previously_sent: datetime | None
) -> Any:
    """The kind's create call. For a provider without idempotency keys whose request may
    have left before (`previously_sent`), the provider's records are read first, and
    only a proven absence (a consistent read: `Absent`) lets the request go out again;
    anything else the read says is the answer, and nothing is sent."""
    if previously_sent is not None and not provider.capabilities.supports_idempotency_keys:
        found = kind.lookup(provider, request)
        if not isinstance(found, Absent):
            return found
    return kind.send(provider, request)


def _not_sent(kind: Kind, locked: Any, row: Any, outcome: NotSent) -> lifecycle.FollowUp:
    """Nothing left: the claim's mark is undone and the send waits (a movement never
    moves to another provider: services/payments/routing.py)."""
    lifecycle.unmark_sending(locked, row.previous_sent_at)
    locked.last_sent_at = row.previous_last_sent_at
    if locked.status != kind.pending:
        return lifecycle.nothing
    return lifecycle.defer(kind, locked, outcome)


def release(kind: Kind, row_id: int) -> Any:
    """The leased row, locked, its lease released (with the caller's commit)."""
    locked = kind.lock(row_id)
    assert locked is not None  # leased rows are never deleted
    locked.lease_expires_at = None
    return locked


def look_up(kind: Kind, row_id: int) -> None:
    """Ask the provider what happened to a row in `kind.looked_up`; apply the answer, ask
    again later or escalate (lifecycle.judge_lookup). Returns early if it is elsewhere
    or leased."""
    if _claim_or_none(kind, row_id, is_send=False) is None:
        return
    row = kind.lock(row_id)
    provider, gateway = provider_for(row.provider), gateway_for(row.provider)
    key, attempt = str(row.idempotency_key), row.reconcile_attempts + 1
    sent = kind.request_for(row, row.first_sent_at)

    def context(step: str, number: int | None = attempt) -> CallContext:
        return CallContext(f"{kind.name}_{step}", row_id, key, number, kind.name)

    def read(locked: Any, named: str | None) -> Callable[[], Any]:
        request = kind.request_for(locked, locked.first_sent_at)
        request = kind.named(request, named) if named else request
        return lambda: kind.lookup(provider, request)

    outcome = replays.ask(
        gateway,
        context("replay"),
        context("lookup"),
        resend=(lambda: kind.send(provider, sent)) if replays.may_replay(row) else None,
        read=read,
        relock=lambda: kind.lock(row_id),
        before=functools.partial(lifecycle.count_lookup, kind, row),
    )
    if isinstance(outcome, Absent) and not provider.capabilities.supports_idempotency_keys:
        # The key-less provider has no such movement: it never happened, so send it now
        # (looked up once more right before sending), through the breaker, recorded as
        # sent before it leaves.
        outcome = gateway.call(
            context("resend", None),
            lambda: send_once(kind, provider, sent, row.first_sent_at),
            before=functools.partial(_mark_resend, kind, row_id),
        )
    follow_up = lifecycle.judge_lookup(kind, release(kind, row_id), outcome)
    db.session.commit()
    follow_up()


def _mark_resend(kind: Kind, row_id: int) -> None:
    row = kind.lock(row_id)  # leased by us still: the lookup's transaction ended
    lifecycle.mark_sending(row, utcnow())
    db.session.commit()
