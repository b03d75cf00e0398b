"""The daily reconciliation: every balance transaction the provider made on a day
matched to our books, and every entry of ours on that day found at the provider.

Each of the provider's transactions is one item:
- a charge matches the success entry of our payment with that PaymentIntent, a refund
  the success entry of our refund with that id, a refund failure its `failed` entry, a
  dispute's withdrawal and reinstatement its `withdrawn:<n>` and `reinstated:<n>` entries:
  `matched`, or `amount_differs` / `currency_differs` (the clearing account's posting
  against the provider's amount), or `missing_at_ours` (no such payment or refund: a
  charge made outside the shop; or ours has no entry yet);
- the provider's fee on any of them is booked from its record (fees:<p> against
  clearing:<p>, the entry named by the balance transaction): a fee is the provider's to
  say; a payout (clearing:<p> to bank:<p>) and a payout that failed (back) too, as
  `booked`, and each payout's contents are read: they must sum to its amount, or
  `payout_differs`;
- anything else (an adjustment, a fee we did not expect) is `missing_at_ours`, named by
  its type and category;
- an item the provider's answer did not let us believe is `unreadable`.
Then every entry of ours that moved the clearing account on that day and that no item
of any day matched is `missing_at_provider`. A day with any item other than matched or
booked is `unreconciled`, and the on-call admins are alerted.

Reconciling a day again reads it again and replaces its items (the bookings are
UNIQUE by their source, so nothing posts twice)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy import delete, func, select

from extensions import db
from models import (
    Account,
    AlertKind,
    DayStatus,
    Dispute,
    ItemOutcome,
    JournalEntry,
    Payment,
    Posting,
    ProviderBalanceTxn,
    ReconciliationDay,
    ReconciliationItem,
    Refund,
    Source,
    SourceKind,
)
from models.types import utcnow
from providers.outcomes import BalanceTxn
from services.backoffice.alerts import raise_alert
from services.books import journal
from services.statements import provider_balance

# The providers whose balance the books are reconciled against (their client reads it).
BALANCE_PROVIDERS = ("stripe",)
OUR_MOVEMENTS = (SourceKind.PAYMENT, SourceKind.REFUND, SourceKind.DISPUTE)
AGREEING = (ItemOutcome.MATCHED, ItemOutcome.BOOKED)
MATCHED_ENTRY = (ItemOutcome.MATCHED, ItemOutcome.AMOUNT_DIFFERS, ItemOutcome.CURRENCY_DIFFERS)
REFUND_STEPS = {"refund": "succeeded", "refund_failure": "failed"}
# A dispute's balance transactions (Stripe's `adjustment`, by reporting category) and the
# steps of our dispute's entries they stand for.
DISPUTE_STEPS = {"dispute": "withdrawn:%", "dispute_reversal": "reinstated:%"}


@dataclass
class Item:
    outcome: ItemOutcome
    detail: str
    txn: ProviderBalanceTxn | None = None
    entry_id: int | None = None
    theirs: int | None = None
    ours: int | None = None
    currency: str | None = None


@dataclass
class DayResult:
    provider: str
    day: date
    items: list[Item] = field(default_factory=list)

    @property
    def status(self) -> DayStatus:
        agree = all(item.outcome in AGREEING for item in self.items)
        return DayStatus.RECONCILED if agree else DayStatus.UNRECONCILED

    def count(self, *outcomes: ItemOutcome) -> int:
        return sum(1 for item in self.items if item.outcome in outcomes)


def day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time.min, UTC)
    return start, start + timedelta(days=1)


def is_reconciled(provider: str, day: date) -> bool:
    status = db.session.scalar(
        select(ReconciliationDay.status).where(
            ReconciliationDay.provider == provider, ReconciliationDay.day == day
        )
    )
    return status == DayStatus.RECONCILED


def reconcile(provider: str, day: date) -> DayResult:
    """Reconcile the provider's day (UTC) and store the result; raises
    provider_balance.BalanceUnreadable when the provider cannot be asked now (nothing
    is stored then). Commits."""
    start, end = day_bounds(day)
    read = provider_balance.day_transactions(provider, start, end)
    contents = {
        txn.source_id: provider_balance.payout_transactions(provider, txn.source_id)
        for txn in read
        if txn.type == "payout" and txn.problem is None
    }
    # One reconciliation of a provider's day at a time (a scheduled run and a person's).
    db.session.execute(
        select(func.pg_advisory_xact_lock(func.hashtext(f"books:reconcile:{provider}:{day}")))
    )
    rows = provider_balance.record(provider, read)
    result = DayResult(provider, day)
    for txn in read:
        if txn.problem is not None:
            result.items.append(Item(ItemOutcome.UNREADABLE, f"{txn.txn_id}: {txn.problem}"))
            continue
        row = rows[txn.txn_id]
        _book(provider, row)
        result.items.append(_judge(provider, row, contents.get(txn.source_id)))
    result.items += _ours_missing(provider, start, end, result)
    _store(result)
    db.session.commit()
    return result


def _book(provider: str, row: ProviderBalanceTxn) -> None:
    """What the provider's record alone decides: its fee, a payout and its failure."""
    source = Source(SourceKind.BALANCE, row.id)
    clearing, currency = Account.clearing(provider), row.currency
    if row.fee_minor:
        fees = Account.fees(provider)
        journal.post(
            source,
            "fee",
            [
                journal.Leg(fees, row.fee_minor, currency),
                journal.Leg(clearing, -row.fee_minor, currency),
            ],
        )
    if row.type in ("payout", "payout_failure"):
        bank = Account.bank(provider)
        moved = -row.amount_minor  # a payout's amount is negative: what left the balance
        journal.post(
            source,
            row.type,
            [journal.Leg(bank, moved, currency), journal.Leg(clearing, -moved, currency)],
        )


def _judge(provider: str, row: ProviderBalanceTxn, contents: list[BalanceTxn] | None) -> Item:
    if row.type == "charge":
        return _against(row, _payment_entry(provider, row))
    if row.type in REFUND_STEPS:
        return _against(row, _refund_entry(provider, row))
    if row.type == "adjustment" and row.category in DISPUTE_STEPS:
        return _against(row, _dispute_entry(provider, row))
    if row.type == "payout" and contents is not None:
        inside = sum(t.amount_minor - t.fee_minor for t in contents if t.type != "payout")
        if inside != -row.amount_minor:
            detail = f"payout {row.source_id} of {-row.amount_minor}: its contents sum to {inside}"
            return _item(ItemOutcome.PAYOUT_DIFFERS, detail, row, ours=inside)
        return _item(ItemOutcome.BOOKED, f"payout {row.source_id}: {len(contents) - 1} inside", row)
    if row.type == "payout_failure":
        return _item(ItemOutcome.BOOKED, f"payout {row.source_id} failed: its money back", row)
    detail = f"{row.type} ({row.category}) {row.source_id}: not in our books"
    return _item(ItemOutcome.MISSING_AT_OURS, detail, row)


def _item(
    outcome: ItemOutcome,
    detail: str,
    row: ProviderBalanceTxn,
    *,
    ours: int | None = None,
    entry_id: int | None = None,
) -> Item:
    return Item(outcome, detail[:200], row, entry_id, row.amount_minor, ours, row.currency)


@dataclass(frozen=True)
class Ours:
    """Our movement a provider's transaction is for, and its entry's clearing posting
    (`entry_id` None: the movement has no entry, `status` says where it is)."""

    label: str
    status: str
    entry_id: int | None = None
    amount: int | None = None
    currency: str | None = None


def _payment_entry(provider: str, row: ProviderBalanceTxn) -> Ours | None:
    payment = db.session.scalars(
        select(Payment).where(
            Payment.provider == provider, Payment.provider_payment_id == row.payment_ref
        )
    ).first()
    if payment is None or row.payment_ref is None:
        return None
    found = _clearing_posting(provider, Source(SourceKind.PAYMENT, payment.id), "succeeded%")
    return Ours(f"payment {payment.id}", payment.status.value, *found)


def _refund_entry(provider: str, row: ProviderBalanceTxn) -> Ours | None:
    refund = db.session.scalars(
        select(Refund).where(
            Refund.provider == provider, Refund.provider_refund_id == row.source_id
        )
    ).first()
    if refund is None:
        return None
    step = REFUND_STEPS[row.type]
    found = _clearing_posting(provider, Source(SourceKind.REFUND, refund.id), step)
    return Ours(f"refund {refund.id}", refund.status.value, *found)


def _dispute_entry(provider: str, row: ProviderBalanceTxn) -> Ours | None:
    dispute = db.session.scalars(
        select(Dispute).where(
            Dispute.provider == provider, Dispute.provider_dispute_id == row.source_id
        )
    ).first()
    if dispute is None:
        return None
    step = DISPUTE_STEPS[row.category]
    found = _clearing_posting(provider, Source(SourceKind.DISPUTE, dispute.id), step)
    return Ours(f"dispute {dispute.id}", dispute.status.value, *found)


def _clearing_posting(
    provider: str, source: Source, step: str
) -> tuple[int | None, int | None, str | None]:
    """The first entry of the movement's step (a LIKE pattern) and its posting to the
    provider's clearing account."""
    found = db.session.execute(
        select(JournalEntry.id, Posting.amount_minor, Posting.currency)
        .join(Posting, Posting.entry_id == JournalEntry.id)
        .where(
            JournalEntry.source_kind == source.kind,
            JournalEntry.source_id == source.id,
            JournalEntry.step.like(step),
            Posting.account == Account.clearing(provider),
        )
        .order_by(JournalEntry.id)
        .limit(1)
    ).first()
    return (found[0], int(found[1]), found[2]) if found else (None, None, None)


def _against(row: ProviderBalanceTxn, ours: Ours | None) -> Item:
    what = f"{row.type} {row.source_id}"
    if ours is None:
        ref = f" ({row.payment_ref})" if row.payment_ref else ""
        return _item(ItemOutcome.MISSING_AT_OURS, f"{what}{ref}: no movement of ours", row)
    if ours.entry_id is None:
        detail = f"{what}: {ours.label} is {ours.status}, not in our books"
        return _item(ItemOutcome.MISSING_AT_OURS, detail, row)
    said = {"ours": ours.amount, "entry_id": ours.entry_id}
    if ours.currency != row.currency:
        detail = f"{what}: {ours.label} in {ours.currency}, theirs in {row.currency}"
        return _item(ItemOutcome.CURRENCY_DIFFERS, detail, row, **said)
    if ours.amount != row.amount_minor:
        detail = f"{what}: {ours.label} moved {ours.amount}, theirs {row.amount_minor}"
        return _item(ItemOutcome.AMOUNT_DIFFERS, detail, row, **said)
    return _item(ItemOutcome.MATCHED, f"{what}: {ours.label}", row, **said)


def _ours_missing(provider: str, start: datetime, end: datetime, result: DayResult) -> list[Item]:
    """Our entries of the day that moved the clearing account and that no item matched
    (this day's, or another day's: a movement near midnight is the provider's next day)."""
    matched_here = {item.entry_id for item in result.items if item.outcome in MATCHED_ENTRY}
    matched_elsewhere = (
        select(ReconciliationItem.entry_id)
        .join(ReconciliationDay, ReconciliationDay.id == ReconciliationItem.day_id)
        .where(
            ReconciliationDay.provider == provider,
            ReconciliationDay.day != result.day,
            ReconciliationItem.outcome.in_(MATCHED_ENTRY),
            ReconciliationItem.entry_id.is_not(None),
        )
    )
    found = db.session.execute(
        select(
            JournalEntry.id,
            JournalEntry.source_kind,
            JournalEntry.source_id,
            JournalEntry.step,
            Posting.amount_minor,
            Posting.currency,
        )
        .join(Posting, Posting.entry_id == JournalEntry.id)
        .where(
            JournalEntry.created_at >= start,
            JournalEntry.created_at < end,
            JournalEntry.source_kind.in_(OUR_MOVEMENTS),
            Posting.account == Account.clearing(provider),
            JournalEntry.id.not_in(matched_elsewhere),
        )
        .order_by(JournalEntry.id)
    )
    return [
        Item(
            ItemOutcome.MISSING_AT_PROVIDER,
            f"{kind.value} {source_id} {step}: not in {provider}'s balance",
            entry_id=entry_id,
            ours=int(amount),
            currency=currency,
        )
        for entry_id, kind, source_id, step, amount, currency in found
        if entry_id not in matched_here
    ]


def _store(result: DayResult) -> None:
    """The day's row (made or updated) and its items, replacing an earlier run's; the
    on-call admins alerted when the day does not reconcile."""
    day = db.session.scalars(
        select(ReconciliationDay)
        .where(ReconciliationDay.provider == result.provider, ReconciliationDay.day == result.day)
        .with_for_update()
    ).first()
    if day is None:
        day = ReconciliationDay(provider=result.provider, day=result.day)
        db.session.add(day)
    day.status = result.status
    day.matched = result.count(*AGREEING)
    day.unmatched = len(result.items) - day.matched
    day.reconciled_at = utcnow()
    db.session.flush()
    db.session.execute(delete(ReconciliationItem).where(ReconciliationItem.day_id == day.id))
    db.session.add_all(
        ReconciliationItem(
            day_id=day.id,
            outcome=item.outcome,
            provider_txn_id=item.txn.id if item.txn is not None else None,
            entry_id=item.entry_id,
            theirs_minor=item.theirs,
            ours_minor=item.ours,
            currency=item.currency,
            detail=item.detail[:200],
        )
        for item in result.items
    )
    if result.status == DayStatus.UNRECONCILED:
        raise_alert(
            AlertKind.BOOKS_UNRECONCILED,
            f"books:{result.provider}:{result.day}:{day.unmatched}",
            f"The books of {result.provider} for {result.day} do not reconcile: "
            f"{day.unmatched} of {len(result.items)} items to look at (Books page).",
        )
