"""What the wallet pages and API read: a customer's wallets and a page of history."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func, select

from extensions import db
from models import LedgerEntry, Wallet


def wallets_of(customer_id: int) -> list[Wallet]:
    return list(
        db.session.scalars(
            select(Wallet).where(Wallet.customer_id == customer_id).order_by(Wallet.currency)
        )
    )


def wallet_in(customer_id: int, currency: str) -> Wallet | None:
    return db.session.scalar(
        select(Wallet).where(Wallet.customer_id == customer_id, Wallet.currency == currency)
    )


@dataclass(frozen=True)
class LedgerPage:
    entries: Sequence[LedgerEntry]
    page: int
    pages: int


def ledger_page(wallet_id: int, requested: int | None, size: int) -> LedgerPage:
    """A page of the wallet's history, newest first. Any number a client sends lands
    on a real page (a huge one would overflow OFFSET)."""
    total = (
        db.session.scalar(
            select(func.count()).select_from(LedgerEntry).where(LedgerEntry.wallet_id == wallet_id)
        )
        or 0
    )
    pages = max(1, -(-total // size))
    page = min(max(requested or 1, 1), pages)
    entries = db.session.scalars(
        select(LedgerEntry)
        .where(LedgerEntry.wallet_id == wallet_id)
        .order_by(LedgerEntry.id.desc())
        .limit(size)
        .offset((page - 1) * size)
    ).all()
    return LedgerPage(entries, page, pages)


def wallet_currency(wallet_id: int) -> str:
    """The currency of a wallet's ledger entries (the session's identity map keeps it)."""
    wallet = db.session.get(Wallet, wallet_id)
    return wallet.currency if wallet is not None else "EUR"
