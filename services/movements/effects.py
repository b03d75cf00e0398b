"""A movement's effect, in one place.

On a wallet, as postings: every change is a ledger entry that names its movement by
typed columns (source_kind, source_id: `Source(DISPUTE, 7)`), so what the movement has
applied is read from the ledger, not remembered beside it, and a later decision gives
back or takes back only what is there (never more than the movement moved, never more
than the wallet holds). Every sum filters by source kind, source id and wallet: a
client's text (a debit's memo) is never matched. Each posting has a UNIQUE operation id:
a repeat applies nothing.

On an order, as a reading: an order's status is never set by a movement; each movement
records what it applied (a payment's or refund's `is_effect_applied`, a dispute's
withdrawn funds, the wallet's ORDER posting) and `settle_order` reads the status from
all of them. Two movements deciding in either order end in the same status.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import and_, exists, func, or_, select

from extensions import db
from models import (
    Dispute,
    LedgerEntry,
    LedgerKind,
    Order,
    OrderStatus,
    Payment,
    Refund,
    Source,
    SourceKind,
    Wallet,
)
from models.types import utcnow
from services.books import journal
from services.wallet import ledger


def _total(column: Any, *where: Any) -> Any:
    return select(func.coalesce(func.sum(column), 0)).where(*where).scalar_subquery()


def of_source(source: Source) -> Any:
    """The condition of the postings that belong to `source`."""
    return and_(LedgerEntry.source_kind == source.kind, LedgerEntry.source_id == source.id)


def posted(source: Source, wallet_id: int, kind: LedgerKind | None = None) -> int:
    """What the movement's postings on the wallet (of `kind`, or all) add up to (credits
    minus debits)."""
    where = [of_source(source), LedgerEntry.wallet_id == wallet_id]
    if kind is not None:
        where.append(LedgerEntry.kind == kind)
    return int(db.session.scalar(select(_total(LedgerEntry.amount_minor, *where))) or 0)


def held_by_topup(payment_id: int, wallet_id: int) -> int:
    """What a top-up's credit still holds in its wallet: its credit and reversals (the
    payment's postings), less what its refunds and disputes took out and did not give
    back. A later decision takes back at most this."""
    refunds = select(Refund.id).where(Refund.payment_id == payment_id)
    disputes = select(Dispute.id).where(Dispute.payment_id == payment_id)
    return int(
        db.session.scalar(
            select(func.coalesce(func.sum(LedgerEntry.amount_minor), 0)).where(
                LedgerEntry.wallet_id == wallet_id,
                or_(
                    of_source(Source(SourceKind.PAYMENT, payment_id)),
                    and_(
                        LedgerEntry.source_kind == SourceKind.REFUND,
                        LedgerEntry.source_id.in_(refunds),
                    ),
                    and_(
                        LedgerEntry.source_kind == SourceKind.DISPUTE,
                        LedgerEntry.source_id.in_(disputes),
                    ),
                ),
            )
        )
        or 0
    )


# A movement's other legs in the books, for what it moved on the wallet (its own leg).
Legs = Callable[[int], list[journal.Leg]]


def take(
    wallet_id: int,
    at_most: int,
    currency: str,
    *,
    operation_id: str,
    kind: LedgerKind,
    source: Source,
    step: str,
    against: Legs,
) -> int:
    """Take up to `at_most` out of the wallet (what it holds, if less: the money it
    credited may have been spent) and post the movement's `step`; returns what was
    taken. Locks the wallet (last in the lock order, services/movements/locks.py)."""
    balance = db.session.scalar(
        select(Wallet.balance_minor).where(Wallet.id == wallet_id).with_for_update()
    )
    amount = max(0, min(at_most, int(balance or 0)))
    _book(wallet_id, -amount, currency, operation_id, kind, source, step, against(amount))
    return amount


def give_back(
    wallet_id: int,
    currency: str,
    *,
    operation_id: str,
    kind: LedgerKind,
    source: Source,
    step: str,
    against: Legs,
) -> int:
    """Return to the wallet what the movement's postings took out of it, and no more,
    and post the movement's `step`; returns how much (0 when nothing is out)."""
    out = max(0, -posted(source, wallet_id))
    _book(wallet_id, out, currency, operation_id, kind, source, step, against(out))
    return out


def _book(
    wallet_id: int,
    amount: int,
    currency: str,
    operation_id: str,
    kind: LedgerKind,
    source: Source,
    step: str,
    legs: list[journal.Leg],
) -> None:
    """The wallet's part of a movement and its entry in the books; only the entry's
    other legs when the wallet moves nothing (and nothing when they are zero too)."""
    if amount != 0:
        ledger.apply_movement(
            wallet_id,
            amount,
            currency,
            operation_id=operation_id,
            kind=kind,
            source=source,
            step=step,
            against=legs,
        )
    elif any(leg.amount_minor for leg in legs):
        journal.post(source, step, legs)


def wallet_paid(order_id: int) -> int:
    """What the wallet paid for the order (its ORDER postings), 0 if it did not."""
    where = (of_source(Source(SourceKind.ORDER, order_id)), LedgerEntry.kind == LedgerKind.ORDER)
    return -int(db.session.scalar(select(_total(LedgerEntry.amount_minor, *where))) or 0)


def order_status(order: Order) -> OrderStatus:
    """What the order's applied movements make it: paid by a payment or the wallet,
    then disputed while a dispute holds its money, refunded by what its refunds gave
    back. Unpaid with refunds or a dispute applied is a contradiction a person sorts
    out (the payment went to review): its status stays as it is."""
    db.session.flush()
    # One statement for the four facts (the order is read on every movement's effect).
    of_order = Payment.order_id == order.id
    is_card_paid, is_withdrawn, refunded, wallet_posted = db.session.execute(
        select(
            exists().where(of_order, Payment.is_effect_applied),
            exists()
            .where(Dispute.payment_id == Payment.id, of_order, Dispute.is_effect_applied)
            .correlate(None),
            _total(Refund.amount_minor, Refund.order_id == order.id, Refund.is_effect_applied),
            _total(
                LedgerEntry.amount_minor,
                LedgerEntry.kind == LedgerKind.ORDER,
                of_source(Source(SourceKind.ORDER, order.id)),
            ),
        )
    ).one()
    refunded = int(refunded)
    if not (is_card_paid or -int(wallet_posted) > 0):
        return order.status if refunded or is_withdrawn else OrderStatus.OPEN
    if is_withdrawn:
        return OrderStatus.DISPUTED
    if refunded >= order.total_minor:
        return OrderStatus.REFUNDED
    return OrderStatus.PARTIALLY_REFUNDED if refunded > 0 else OrderStatus.PAID


def settle_order(order: Order) -> OrderStatus:
    """Set the (locked) order's status from its movements' effects; returns it."""
    status = order_status(order)
    if status != order.status:
        if order.status == OrderStatus.OPEN:
            order.paid_at = utcnow()
        elif status == OrderStatus.OPEN:
            order.paid_at = None
        order.status = status
    return status
