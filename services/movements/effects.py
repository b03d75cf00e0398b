"""A movement's effect on a wallet, as postings: every change is a ledger entry under
the movement's reference ("dispute 7"), so what the movement has applied is read from
the ledger, not remembered beside it, and a later decision gives back or takes back
only what is there (never more than the movement moved, never more than the wallet
holds). Each posting has a UNIQUE operation id: a repeat applies nothing.
"""

from __future__ import annotations

from sqlalchemy import String, cast, func, literal, or_, select

from extensions import db
from models import Dispute, LedgerEntry, LedgerKind, Refund, Wallet
from services.wallet import ledger


def posted(reference: str) -> int:
    """What the movement's postings add up to (credits minus debits)."""
    return int(
        db.session.scalar(
            select(func.coalesce(func.sum(LedgerEntry.amount_minor), 0)).where(
                LedgerEntry.reference == reference
            )
        )
        or 0
    )


def held_by_topup(payment_id: int) -> int:
    """What a top-up's credit still holds in its wallet: its credit and reversals
    ("payment N"), less what its refunds and disputes took out and did not give back.
    A later decision takes back at most this."""
    refunds = select(literal("refund ") + cast(Refund.id, String)).where(
        Refund.payment_id == payment_id
    )
    disputes = select(literal("dispute ") + cast(Dispute.id, String)).where(
        Dispute.payment_id == payment_id
    )
    return int(
        db.session.scalar(
            select(func.coalesce(func.sum(LedgerEntry.amount_minor), 0)).where(
                or_(
                    LedgerEntry.reference == f"payment {payment_id}",
                    LedgerEntry.reference.in_(refunds),
                    LedgerEntry.reference.in_(disputes),
                )
            )
        )
        or 0
    )


def take(
    wallet_id: int,
    at_most: int,
    currency: str,
    *,
    operation_id: str,
    kind: LedgerKind,
    reference: str,
) -> int:
    """Take up to `at_most` out of the wallet (what it holds, if less: the money it
    credited may have been spent); returns what was taken. Locks the wallet (last in
    the lock order, services/movements/locks.py)."""
    balance = db.session.scalar(
        select(Wallet.balance_minor).where(Wallet.id == wallet_id).with_for_update()
    )
    amount = min(at_most, int(balance or 0))
    if amount <= 0:
        return 0
    ledger.apply_movement(
        wallet_id, -amount, currency, operation_id=operation_id, kind=kind, reference=reference
    )
    return amount


def give_back(
    wallet_id: int, currency: str, *, operation_id: str, kind: LedgerKind, reference: str
) -> int:
    """Return to the wallet what the movement's postings took out of it, and no more;
    returns how much (0 when nothing is out)."""
    out = -posted(reference)
    if out <= 0:
        return 0
    ledger.apply_movement(
        wallet_id, out, currency, operation_id=operation_id, kind=kind, reference=reference
    )
    return out
