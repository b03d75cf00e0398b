"""A lookup's replay of the key is a send, for every kind (a charge, a refund).

Replaying the create with the same idempotency key returns the provider's stored
answer, but it is also a request that can still create the movement: when the first
request never reached the provider (a 502 at its edge), the replay is the one that
runs. So it is recorded like every send before it leaves (`mark_sending`: the attempt,
`last_sent_at`, committed), and it goes through the gateway, which writes the call log.

What its answer means:
- final (a success, a decline): the lookup's answer;
- not sent (connection refused, 429): nothing left; the mark is undone;
- from the provider's store (`Idempotent-Replayed`) and not final (a stored 500, a
  stored requires-action): nothing ran anew, so the mark's time is taken back and the
  provider's records are read now (`Replayed.needs_read`), their settle window still
  measured from the last request that did run;
- anything else (a timeout, 409 `idempotency_key_in_use`, a fresh 5xx): this request
  may still be running at the provider. The lookup ends Unknown, and the next one waits
  a full settle window after it: no lookup concludes Absent in the same call as a send.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from extensions import db
from models.types import utcnow
from providers.outcomes import Declined, LookupOutcome, NotSent, Outcome, Succeeded, Unknown
from resilience.gateway import CallContext, CallRecord, Gateway, is_refused
from services.movements import lifecycle
from services.platform import call_log
from services.platform.provider_clients import provider_for


@dataclass(frozen=True)
class Replayed:
    """What a replay answered, and whether the provider's records must be read now (the
    answer came from its store and is not final: where the movement is now, only they
    say)."""

    outcome: LookupOutcome
    needs_read: bool = False


def may_replay(row: lifecycle.Movement) -> bool:
    """Whether the provider still certainly keeps the row's key (replays return its
    first answer then); a provider without replayable keys never replays."""
    capabilities = provider_for(row.provider).capabilities
    deadline = lifecycle.key_deadline(row)
    return capabilities.can_replay and deadline is not None and utcnow() < deadline


def replay(
    gateway: Gateway,
    context: CallContext,
    send: Callable[[], Outcome],
    *,
    relock: Callable[[], Any],
    before: Callable[[], object] | None = None,
) -> Replayed:
    """Send the create again with its key, recorded as a send; commits. `relock` locks
    the (leased) row again; `before` runs first once the breaker admits the call."""
    previous: dict[str, datetime | None] = {}

    def mark_sending() -> None:
        if before is not None:
            before()
        row = relock()
        previous["first"], previous["last"] = row.first_sent_at, row.last_sent_at
        lifecycle.mark_sending(row, utcnow())
        db.session.commit()

    records: list[CallRecord] = []
    outcome = gateway.call(context, send, before=mark_sending, recorder=records.append)
    call_log.write_all(records)
    if is_refused(outcome):
        return Replayed(outcome)  # the open circuit refused it: nothing was marked
    answer = records[-1] if records else None
    row = relock()
    replayed = _meaning(outcome, answer)
    if isinstance(outcome, NotSent):
        lifecycle.unmark_sending(row, previous["first"])
        row.last_sent_at = previous["last"]
    elif replayed.needs_read:
        row.last_sent_at = previous["last"]  # nothing ran anew
    else:
        # A request that ran: the clocks as they were at its send.
        note_clock(row, answer.clock_offset_s if answer else None)
    db.session.commit()
    return replayed


def ask(
    gateway: Gateway,
    replay_context: CallContext,
    lookup_context: CallContext,
    *,
    resend: Callable[[], Outcome] | None,
    read: Callable[[Any, str | None], Callable[[], LookupOutcome]],
    relock: Callable[[], Any],
    before: Callable[[], object],
) -> LookupOutcome:
    """One lookup of a (leased) row, for every kind: the replay of the create first when
    `resend` is given (the key is alive: `may_replay`), recorded as a send; then, only
    when the replay cannot answer, the provider's records: `read(row, named)` builds
    that call from the row locked again and the provider id the replay named. `before`
    (the lookup's count) runs once, before the first request. Commits."""
    named: str | None = None
    counted: Callable[[], object] | None = before
    if resend is not None:
        replayed = replay(gateway, replay_context, resend, relock=relock, before=before)
        if not replayed.needs_read:
            return replayed.outcome
        named = getattr(replayed.outcome, "provider_payment_id", None)
        counted = None
    call = read(relock(), named)
    db.session.commit()  # no transaction stays open around the call
    return gateway.call(lookup_context, call, before=counted)


def _meaning(outcome: Outcome | NotSent, answer: CallRecord | None) -> Replayed:
    if isinstance(outcome, Succeeded | Declined | NotSent):
        return Replayed(outcome)
    if answer is not None and answer.is_replayed:
        return Replayed(outcome, needs_read=True)
    if isinstance(outcome, Unknown):
        return Replayed(
            Unknown(
                f"our replay may still be running at the provider ({outcome.reason}): "
                "absence waits a settle window after it",
                is_provider_failure=outcome.is_provider_failure,
                provider_payment_id=outcome.provider_payment_id,
                report=outcome.report,
            )
        )
    return Replayed(outcome)  # a fresh answer that is not final (requires action): as is


def note_clock(row: object, offset_s: float | None) -> None:
    """Keep the provider's clock less ours as read at a send, where the row keeps it."""
    if offset_s is not None and hasattr(row, "provider_clock_offset_s"):
        row.provider_clock_offset_s = offset_s
