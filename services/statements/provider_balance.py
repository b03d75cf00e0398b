"""The provider's side of the books, read: a day's balance transactions (and what a
payout contains), page by page through the provider's gateway, kept in
provider_balance_transactions (UNIQUE by the provider's id: a second read of a day
writes nothing new)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime

from sqlalchemy import String, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from extensions import db
from models import ProviderBalanceTxn
from models.types import utcnow
from providers.base import BalanceReader, ManualPayouts
from providers.outcomes import BalancePage, BalanceTxn
from resilience.gateway import CallContext
from services.platform.provider_clients import gateway_for, provider_for
from services.statements.ours import CHUNK, among

# A day of 100,000 transactions is 1,000 pages of Stripe's 100; past this the day is
# not read (the provider cannot be asked for all of it now) rather than half-read.
MAX_PAGES = 5000


class BalanceUnreadable(Exception):
    """The provider could not be asked (no answer, an open circuit): nothing was judged."""


def reader(provider: str) -> BalanceReader | None:
    """The provider's client when its balance can be read (None: it cannot)."""
    client = provider_for(provider)
    return client if isinstance(client, BalanceReader) else None


def day_transactions(provider: str, start: datetime, end: datetime) -> list[BalanceTxn]:
    """Every balance transaction the provider made in [start, end)."""
    client = _reader(provider)
    return _every_page(provider, "balance", lambda after: client.balance_page(start, end, after))


def payout_transactions(provider: str, payout_id: str) -> list[BalanceTxn] | None:
    """What a payout contains, its own transaction included; None for a payout made by
    hand (Stripe lists no contents of one: it is paid from the available balance)."""
    client = _reader(provider)
    if isinstance(client, ManualPayouts):
        automatic = gateway_for(provider).call(
            CallContext("payout"),
            functools.partial(client.payout_is_automatic, payout_id),
            is_failure=lambda answer: answer is None,
        )
        if automatic is None:
            raise BalanceUnreadable(f"{provider} payout {payout_id}: no answer")
        if automatic is False:
            return None
    return _every_page(provider, "payout", lambda after: client.payout_page(payout_id, after))


def _reader(provider: str) -> BalanceReader:
    client = reader(provider)
    if client is None:
        raise BalanceUnreadable(f"{provider}: its balance cannot be read")
    return client


def _every_page(
    provider: str, operation: str, read: Callable[[str | None], BalancePage | None]
) -> list[BalanceTxn]:
    gateway = gateway_for(provider)
    items: list[BalanceTxn] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = gateway.call(
            CallContext(operation),
            functools.partial(read, cursor),
            is_failure=lambda answer: answer is None,
        )
        if not isinstance(page, BalancePage):
            raise BalanceUnreadable(f"{provider} {operation}: no answer")
        items.extend(page.items)
        cursor = page.next_cursor
        if cursor is None:
            return items
    raise BalanceUnreadable(f"{provider} {operation}: more than {MAX_PAGES} pages")


def record(provider: str, items: list[BalanceTxn]) -> dict[str, int]:
    """Keep what was read (a transaction read before stays as it was first read: the
    provider's balance transactions do not change); each row's id by the provider's id.
    Items that could not be believed are not kept (the caller names them)."""
    items = [txn for txn in items if txn.problem is None]
    now = utcnow()
    for start in range(0, len(items), CHUNK):  # rows built a chunk at a time (memory)
        rows = [
            {
                "provider": provider,
                "txn_id": txn.txn_id,
                "type": txn.type,
                "category": txn.category,
                "source_id": txn.source_id,
                "payment_ref": txn.payment_ref,
                "amount_minor": txn.amount_minor,
                "fee_minor": txn.fee_minor,
                "currency": txn.currency,
                "exchange_rate": txn.exchange_rate,
                "created_at": txn.created_at or now,
                "read_at": now,
            }
            for txn in items[start : start + CHUNK]
        ]
        # One statement compiled once for every row (SQLAlchemy's insertmanyvalues).
        db.session.execute(
            pg_insert(ProviderBalanceTxn).on_conflict_do_nothing(
                index_elements=["provider", "txn_id"]
            ),
            rows,
        )
    ids = sorted({txn.txn_id for txn in items})
    found: dict[str, int] = {}
    for start in range(0, len(ids), CHUNK):
        query = select(ProviderBalanceTxn.txn_id, ProviderBalanceTxn.id).where(
            ProviderBalanceTxn.provider == provider,
            among(ProviderBalanceTxn.txn_id, ids[start : start + CHUNK], String),
        )
        found.update((txn_id, row_id) for txn_id, row_id in db.session.execute(query))
    return found
