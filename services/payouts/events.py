"""A provider's payout events, applied like every event (services/webhooks/events.py):
the payout is recorded the first time one of its events comes (UNIQUE by provider and
payout id, so two events of one payout never both record it) and its row locked; its
status moves only forward (a redelivered or late `payout.created` after `payout.paid`
changes nothing; `paid` may still turn `failed`, as Stripe documents); an event whose
amount or currency differs from the payout's, or that cannot be a payout of ours (no
amount, a currency we do not know), is rejected and changes nothing.

Nothing here moves money: the books post a payout from the provider's balance when its
day is reconciled (services/statements/reconcile.py), which compares the two."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert

from extensions import db
from models import PayoutStatus, ProcessedWebhook, ProviderPayout, WebhookState
from models.money import KNOWN_CURRENCIES
from models.types import utcnow
from providers.events import PayoutFacts, ProviderEvent
from services.movements import kinds
from services.platform.locales import money_text

STATUSES = {status.value: status for status in PayoutStatus}


def apply_payout_event(
    provider: str, event: ProviderEvent, record: ProcessedWebhook, located: Any = None
) -> str:
    """Apply a payout event in the caller's transaction; set record.state."""
    facts = event.payout
    if facts is None or not event.provider_id:  # a parser's bug, never a payout
        record.state, record.note = WebhookState.REJECTED, "a payout event without its payout"
        return record.state
    status = STATUSES.get(facts.status)
    problem = _cannot_be_a_payout(facts)
    if status is None or problem:
        record.state = WebhookState.REJECTED if problem else WebhookState.IGNORED
        record.note = problem or f"unknown payout status {facts.status[:32]!r}: nothing changed"
        return record.state
    assert facts.amount_minor is not None and facts.currency is not None
    payout = _locked(provider, event, facts, status)
    what = f"payout {event.provider_id}"
    if (payout.amount_minor, payout.currency) != (facts.amount_minor, facts.currency):
        record.state = WebhookState.REJECTED
        record.note = (
            f"{what} is {money_text(payout.amount_minor, payout.currency)}, this event says "
            f"{money_text(facts.amount_minor, facts.currency)}: nothing changed"
        )[:500]
        return record.state
    if status == payout.status and payout.event_created_at == event.created_at:
        record.state, record.note = WebhookState.APPLIED, f"{what} recorded: {status.value}"
        return record.state
    if status.rank <= payout.status.rank and status != payout.status:
        record.state = WebhookState.IGNORED
        record.note = f"{what} is {payout.status.value} already: {status.value} is older"
        return record.state
    was = payout.status
    payout.status, payout.updated_at = status, utcnow()
    payout.event_created_at = max(payout.event_created_at, event.created_at)
    payout.failure_code = facts.failure_code or payout.failure_code
    if facts.arrival_date is not None:
        payout.arrival_date = facts.arrival_date.date()
    record.state = WebhookState.APPLIED
    record.note = f"{what} {was.value} -> {status.value}" if was != status else f"{what} updated"
    return record.state


def _cannot_be_a_payout(facts: PayoutFacts) -> str | None:
    amount, currency = facts.amount_minor, facts.currency
    if amount is None or amount <= 0:
        said = (
            money_text(amount, currency)
            if amount is not None and currency in KNOWN_CURRENCIES
            else repr(amount)
        )
        return f"a payout of {said}: not a payout of ours"
    if currency not in KNOWN_CURRENCIES:
        return f"a payout in {currency!r}: not a currency we know"
    return None


def _locked(
    provider: str, event: ProviderEvent, facts: PayoutFacts, status: PayoutStatus
) -> ProviderPayout:
    """The payout's row, locked; recorded first as this event tells it when new."""
    now = utcnow()
    db.session.execute(
        insert(ProviderPayout)
        .values(
            provider=provider,
            payout_id=event.provider_id,
            amount_minor=facts.amount_minor,
            currency=facts.currency,
            status=status,
            arrival_date=facts.arrival_date.date() if facts.arrival_date else None,
            failure_code=facts.failure_code,
            event_created_at=event.created_at,
            created_at=now,
            updated_at=now,
        )
        .on_conflict_do_nothing(index_elements=["provider", "payout_id"])
    )
    payout = db.session.scalar(
        select(ProviderPayout)
        .where(ProviderPayout.provider == provider, ProviderPayout.payout_id == event.provider_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    assert payout is not None
    return payout


# A payout's event locks no payment: it comes first in a batch's lock order.
kinds.on_events("payout", apply_payout_event, lambda provider, event: None)
