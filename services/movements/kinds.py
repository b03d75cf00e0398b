"""The Kind template: what a kind of money movement declares, and the registry of kinds.

A kind (a charge, a refund) is data and a few small functions, declared once in its
domain package (services/payments/kind.py, services/refunds/kind.py) and registered
here. Everything they share runs once, in services/movements/: the claim, the send,
the lookup, the janitor (engine.py, janitor.py, lifecycle.py), and the dispatch of
provider events by kind. Adding a kind: docs/architecture.md, "Adding a movement kind".
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from models import ProcessedWebhook, TransitionSource
from providers.base import Provider
from providers.events import ProviderEvent
from services.platform import job_paths

FollowUp = Callable[[], object]
# Apply a provider event to the kind's row, in the caller's transaction; set record.state.
# Its last argument: what the kind's EventLocator answered for the event (a batch has
# asked already), or LOOK_UP.
EventHandler = Callable[[str, ProviderEvent, ProcessedWebhook, Any], str]
# The (payment id, order id) an event's row locks first, not locked: a batch of events
# takes its rows' locks in this order (services/movements/locks.py), every kind alike.
EventLocator = Callable[[str, ProviderEvent], "tuple[int, int | None] | None"]


@dataclass(frozen=True)
class Kind:
    """One kind of money movement sent to a provider."""

    name: str  # job ids, call log operations, metrics and events name the kind by it
    noun: str  # in reasons a person reads: "payment", "refund"
    model: Any  # its rows' model: the lifecycle's columns (lifecycle.Movement), status
    # Its status enum: the engine reads and moves to its PENDING, UNKNOWN, FAILED and
    # NEEDS_REVIEW members.
    statuses: Any
    looked_up: tuple[enum.Enum, ...]  # the states a lookup asks about
    send_source: TransitionSource  # who a send's answer is recorded as
    lookup_prefix: str  # its lookup jobs' id prefix
    move: Callable[..., bool]  # its state machine: move(row, to, *, source, reason)
    lock: Callable[[int], Any]  # its row, locked in the one lock order (locks.py)
    # The provider request for a row: request_for(row, first_sent_at); `named(request,
    # provider_id)` the same request naming the provider's id a replay answered.
    request_for: Callable[[Any, datetime | None], Any]
    named: Callable[[Any, str], Any]
    send: Callable[[Provider, Any], Any]  # the create call: provider.charge(request)
    lookup: Callable[[Provider, Any], Any]  # the read of the provider's records
    # What an answer means for the locked row: apply(kind, row, outcome, source,
    # previously_sent) -> what to enqueue after the commit.
    apply: Callable[[Kind, Any, Any, TransitionSource, datetime | None], FollowUp]
    on_event: EventHandler
    locate_event: EventLocator
    # What only some kinds do (None: nothing):
    claim_set: str = ""  # more SET of the send's claim (SQL, on `p` and `before`)
    claim_returning: str = "p.*"  # the columns the send needs back (SQL)
    # Before a send: the claimed row to send (perhaps with more filled in), None when it
    # settled the row without sending it, or a NotSent: not now (deferred, as the open
    # breaker defers it).
    before_send: Callable[[Any], Any] | None = None
    # After a send's answer is applied and committed, or the row settled without a send
    # (also when either raised): the claimed row.
    after_send: Callable[[Any], None] | None = None
    settle: Callable[[Any, Any, list[Any]], bool] | None = None  # a success in one statement

    def send_job_id(self, row_id: int, suffix: str = "") -> str:
        return f"{self.name}-{row_id}{suffix}"

    def lookup_job_id(self, row_id: int, attempts: int, suffix: str = "") -> str:
        return f"{self.lookup_prefix}-{row_id}-{attempts}{suffix}"

    @property
    def pending(self) -> enum.Enum:
        return self.statuses.PENDING

    @property
    def unknown(self) -> enum.Enum:
        return self.statuses.UNKNOWN

    @property
    def failed(self) -> enum.Enum:
        return self.statuses.FAILED

    @property
    def review(self) -> enum.Enum:
        return self.statuses.NEEDS_REVIEW

    @property
    def row_noun(self) -> str:
        return str(self.model.__tablename__).rstrip("s")


SEND_JOB = job_paths.SEND  # every kind's send runs this job with (kind name, row id)
LOOKUP_JOB = job_paths.LOOK_UP
LOOK_UP: Any = object()  # an EventHandler's `located` when nobody asked the locator yet
KINDS: dict[str, Kind] = {}
# The handlers of provider events by the event's kind: every Kind's, and those of what
# is not sent by us (a dispute: services/disputes/events.py).
EVENT_HANDLERS: dict[str, tuple[EventHandler, EventLocator]] = {}


def register(kind: Kind) -> Kind:
    """Add a kind: the janitor sweeps it, its jobs find it by name, its events reach it."""
    KINDS[kind.name] = kind
    on_events(kind.name, kind.on_event, kind.locate_event)
    return kind


def on_events(name: str, handler: EventHandler, locator: EventLocator) -> None:
    EVENT_HANDLERS[name] = (handler, locator)


def named(name: str) -> Kind:
    return KINDS[name]
