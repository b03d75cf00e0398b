"""Our side of a day's reconciliation, read in batches: the payment, refund or dispute
each of the provider's transactions stands for, and the clearing posting of the entry
that matches it. A day of 100,000 transactions is a few hundred queries, not 300,000."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, String, any_, literal, select
from sqlalchemy.dialects.postgresql import ARRAY

from extensions import db
from models import Account, Dispute, JournalEntry, Payment, Posting, Refund, SourceKind
from providers.outcomes import BalanceTxn

CHUNK = 5000  # ids a query, rows a statement: a day of 100,000 in a few dozen
# A refund's balance transactions and the steps of our refund's entries they stand for
# (a top-up's refund books its money out of the wallet when it is requested: "taken";
# an admin's later confirmation is "succeeded:2").
REFUND_STEPS = {"refund": ("succeeded", "taken"), "refund_failure": ("failed",)}
# A dispute's balance transactions (Stripe's `adjustment`, by reporting category) and the
# steps of our dispute's entries they stand for.
DISPUTE_STEPS = {"dispute": "withdrawn:", "dispute_reversal": "reinstated:"}


@dataclass(frozen=True)
class Ours:
    """Our movement a provider's transaction is for, and its entry's clearing posting
    (`entry_id` None: the movement has no such entry, `status` says where it is)."""

    label: str
    status: str
    entry_id: int | None = None
    amount: int | None = None
    currency: str | None = None


def among(column: Any, values: list[Any], item_type: Any = BigInteger) -> Any:
    """`column = ANY(array)`: one parameter, however many values. `IN (...)` binds one
    parameter per value, and once psycopg prepares such a statement PostgreSQL plans it
    for any 5,000 values (a scan of the whole table: 15 s a chunk at 200k postings)."""
    return column == any_(literal(values, ARRAY(item_type)))


def _chunks(values: Iterable[Any]) -> Iterator[list[Any]]:
    listed = sorted(set(values))
    for start in range(0, len(listed), CHUNK):
        yield listed[start : start + CHUNK]


@dataclass(frozen=True)
class _Kind:
    """How a type of the provider's transactions finds our movement and its step."""

    source_kind: SourceKind
    model: Any
    provider_id: Any  # the model's column holding the provider's id
    ref: Callable[[BalanceTxn], str | None]  # the provider's id in the transaction
    is_step: Callable[[BalanceTxn, str], bool]


def _is_success(_txn: BalanceTxn, step: str) -> bool:
    return step == "succeeded" or step.startswith("succeeded:")


KINDS = {
    "charge": _Kind(
        SourceKind.PAYMENT,
        Payment,
        Payment.provider_payment_id,
        lambda t: t.payment_ref,
        _is_success,
    ),
    "refund": _Kind(
        SourceKind.REFUND,
        Refund,
        Refund.provider_refund_id,
        lambda t: t.source_id,
        lambda t, step: step.split(":")[0] in REFUND_STEPS[t.type],
    ),
    "dispute": _Kind(
        SourceKind.DISPUTE,
        Dispute,
        Dispute.provider_dispute_id,
        lambda t: t.source_id,
        lambda t, step: step.startswith(DISPUTE_STEPS[t.category]),
    ),
}


def kind_of(txn: BalanceTxn) -> str | None:
    """Which of our movements the transaction stands for (None: none of ours can)."""
    if txn.type == "charge":
        return "charge"
    if txn.type in REFUND_STEPS:
        return "refund"
    if txn.type == "adjustment" and txn.category in DISPUTE_STEPS:
        return "dispute"
    return None


def ours_for(provider: str, txns: list[BalanceTxn]) -> dict[str, Ours | None]:
    """For each transaction of ours to match (by its id): our movement and entry, or None
    when no movement of ours has the provider's id."""
    found: dict[str, Ours | None] = {}
    for name, kind in KINDS.items():
        mine = [t for t in txns if kind_of(t) == name]
        movements = _movements(provider, kind, {kind.ref(t) for t in mine} - {None})
        postings = _postings(provider, kind.source_kind, [m[0] for m in movements.values()])
        for txn in mine:
            movement = movements.get(kind.ref(txn) or "")
            if movement is None:
                found[txn.txn_id] = None
                continue
            row_id, status = movement
            label = f"{kind.source_kind.value} {row_id}"
            first = next((p for p in postings[row_id] if kind.is_step(txn, p[0])), None)
            found[txn.txn_id] = Ours(label, status, *first[1:]) if first else Ours(label, status)
    return found


def _movements(provider: str, kind: _Kind, refs: set[str | None]) -> dict[str, tuple[int, str]]:
    """Our rows by the provider's id: (row id, status)."""
    rows: dict[str, tuple[int, str]] = {}
    for chunk in _chunks(refs):
        query = select(kind.provider_id, kind.model.id, kind.model.status).where(
            kind.model.provider == provider, among(kind.provider_id, chunk, String)
        )
        rows.update(
            (ref, (row_id, status.value)) for ref, row_id, status in db.session.execute(query)
        )
    return rows


def _postings(
    provider: str, source_kind: SourceKind, row_ids: list[int]
) -> dict[int, list[tuple[str, int, int, str]]]:
    """Each movement's entries, oldest first, as (step, entry id, clearing amount, currency).
    Two reads, each by its own index: the entries by their source, then their postings by
    entry (a join let PostgreSQL walk every posting of the clearing account instead,
    which grows with the history)."""
    found: dict[int, list[tuple[str, int, int, str]]] = defaultdict(list)
    clearing = Account.clearing(provider)
    for chunk in _chunks(row_ids):
        entries = {
            entry_id: (source_id, step)
            for entry_id, source_id, step in db.session.execute(
                select(JournalEntry.id, JournalEntry.source_id, JournalEntry.step).where(
                    JournalEntry.source_kind == source_kind, among(JournalEntry.source_id, chunk)
                )
            )
        }
        postings = db.session.execute(
            select(Posting.entry_id, Posting.amount_minor, Posting.currency)
            .where(among(Posting.entry_id, list(entries)), Posting.account == clearing)
            .order_by(Posting.entry_id)
        )
        for entry_id, amount, currency in postings:
            source_id, step = entries[entry_id]
            found[source_id].append((step, entry_id, int(amount), currency))
    return found
