"""Wallet money movements: a balance changes only together with its ledger entry and
the entry's posting in the books.

Each movement runs in the caller's transaction under a row lock on the wallet;
the ledger entry's UNIQUE operation_id makes a repeated operation return the
original result and change nothing. The CHECK (balance >= 0) is the last barrier.

A wallet is an account of the books (`wallet:<id>`, services/books/journal.py): every
ledger entry posts a journal entry in the same transaction, the wallet's leg (linked to
the ledger entry, the opposite sign: we owe the customer what the wallet holds) against
the account the money came from or went to. The database refuses a ledger entry without
its posting at the commit (migration 0030), so a wallet's balance is its account's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import inspect as sa_inspect
from sqlalchemy import select

from extensions import db
from models import (
    SOURCE_OF_KIND,
    Account,
    Customer,
    LedgerEntry,
    LedgerKind,
    Source,
    SourceKind,
    Wallet,
)
from models.money import InvalidAmountError, Money, validate_money
from models.types import utcnow
from services.books import journal
from services.platform import metrics
from services.platform.errors import ClientError
from services.platform.locales import money_text
from settings import settings


class WalletError(ClientError):
    """A wallet operation was refused; nothing was written. `code` is stable for clients."""

    code = "invalid_wallet_operation"
    status = 422


class InsufficientFundsError(WalletError):
    code = "insufficient_funds"
    status = 409


class CurrencyMismatchError(WalletError):
    code = "currency_mismatch"


class OperationConflictError(WalletError):
    """The operation id was already used for a different movement."""

    code = "operation_id_reused"


class WalletNotFoundError(WalletError):
    code = "wallet_not_found"
    status = 404


# The account a movement of each kind moves against, unless its caller names the legs: what
# a customer spends from the wallet is revenue, what comes back to it a refund, what a
# chargeback takes is the dispute's. A top-up and its reversal name their provider's
# clearing account (services/payments/settling.py, state.py).
COUNTER: dict[LedgerKind, str] = {
    LedgerKind.DEBIT: Account.REVENUE,
    LedgerKind.ORDER: Account.REVENUE,
    LedgerKind.REFUND: Account.REFUNDS,
    LedgerKind.DISPUTE: Account.DISPUTES,
    LedgerKind.ADJUSTMENT: Account.ADJUSTMENTS,
}


@dataclass(frozen=True)
class Movement:
    """The result of a movement; `is_replay` when the operation id had been applied before."""

    entry_id: int
    wallet_id: int
    operation_id: str
    amount_minor: int
    balance_after_minor: int
    is_replay: bool


def apply_movement(
    wallet_id: int,
    amount_minor: int,
    currency: str | None,
    *,
    operation_id: str,
    kind: LedgerKind,
    source: Source | None = None,
    memo: str = "",
    step: str | None = None,
    against: list[journal.Leg] | None = None,
) -> Movement:
    """Credit (positive) or debit (negative) a wallet exactly once per operation id, and
    post it to the books.

    `source` is the movement of ours the posting belongs to (the one its kind names:
    SOURCE_OF_KIND); `memo` is text to show (a client's reference), never matched.
    `currency` None means the wallet's own. The journal entry is the source's `step`
    (by default the kind and the ledger entry's id; a movement that names no source is
    its ledger entry's); `against` are its other legs (by default the kind's COUNTER
    account), which with the wallet's leg must balance. Runs in the caller's
    transaction and does not commit. Raises WalletError subclasses (nothing written) for
    bad amounts, currency mismatch, insufficient funds or an operation id reused for
    another movement.
    """
    if SOURCE_OF_KIND[kind] != (source.kind if source else None):
        raise ValueError(f"a {kind.value} posting names {source or 'no source'}")
    if against is None and kind not in COUNTER:
        raise ValueError(f"a {kind.value} posting names the account it moves against")
    config = settings().money
    try:
        validate_money(
            abs(amount_minor) if isinstance(amount_minor, int) else amount_minor,
            currency or config.currencies[0],
            max_minor=config.max_amount_minor,
            allowed=config.currencies,
        )
    except InvalidAmountError as exc:
        raise WalletError(str(exc)) from None
    if not operation_id or len(operation_id) > 100:
        raise WalletError("operation_id must be 1 to 100 characters")
    # The row lock is held from the SELECT to COMMIT, so every microsecond spent in
    # between is paid by every other client of a hot wallet: the three statements
    # go straight to the driver (see _HotPath).
    hot = _HotPath.for_session()
    locked = hot.lock(wallet_id)
    if locked is None:
        raise WalletNotFoundError(f"no wallet {wallet_id}")
    balance, wallet_currency = locked
    if currency is not None and wallet_currency != currency.upper():
        raise CurrencyMismatchError(
            f"wallet {wallet_id} holds {wallet_currency}, the amount is in {currency.upper()}"
        )
    if balance + amount_minor < 0:
        # A repeat of a debit that succeeded earlier must get its original result,
        # not "insufficient funds" for money it already spent.
        earlier = _existing(operation_id)
        if earlier is not None:
            return _replay(earlier, wallet_id, amount_minor, kind, source, memo)
        raise InsufficientFundsError(
            f"the balance {money_text(balance, wallet_currency)} is less than "
            f"{money_text(-amount_minor, wallet_currency)}",
            details={"balance": Money(balance, wallet_currency)},
        )
    balance_after = balance + amount_minor
    now = utcnow()
    # The books' legs, checked before anything is written: the wallet's (its ledger
    # entry's id comes with the entry) and the other side's.
    wallet_leg = journal.Leg(Account.wallet(wallet_id), -amount_minor, wallet_currency)
    counter = against or [journal.Leg(COUNTER[kind], amount_minor, wallet_currency)]
    journal.check_balanced(
        source or "a wallet movement", step or kind.value, [wallet_leg, *counter]
    )
    # The UNIQUE operation_id decides whether this is a repeat (never SELECT-then-INSERT).
    # ON CONFLICT DO NOTHING instead of catching the violation in a savepoint: the same
    # guarantee without two more round trips inside the lock, and no rollback that
    # could take the caller's transaction (a payment's state change) with it.
    entry_id = hot.insert_entry(
        wallet_id, operation_id, amount_minor, kind, source, memo[:200], balance_after, now
    )
    if entry_id is None:
        # The operation id exists: a repeat; nothing was written, report the original.
        earlier = _existing(operation_id)
        if earlier is None:
            raise WalletError("the operation id is being used right now; retry")
        return _replay(earlier, wallet_id, amount_minor, kind, source, memo)
    hot.set_balance(wallet_id, balance_after, now)
    legs = [dataclasses.replace(wallet_leg, ledger_entry_id=entry_id), *counter]
    book, step = (
        source or Source(SourceKind.LEDGER, entry_id),
        step or _step(kind, source, entry_id),
    )
    if not journal.post_on(hot.cursor, book, step, legs):
        # A step posted before its ledger entry existed: a caller reused a step (a bug).
        raise journal.UnbalancedEntryError(f"{book} {step}: posted before its ledger entry")
    _expire_cached(wallet_id)
    return Movement(entry_id, wallet_id, operation_id, amount_minor, balance_after, is_replay=False)


def _step(kind: LedgerKind, source: Source | None, entry_id: int) -> str:
    return kind.value if source is None else f"{kind.value}:{entry_id}"


class _HotPath:
    """The debit's four statements (its posting in the books too), straight on the psycopg
    cursor of the session's own connection and transaction: SQLAlchemy's per-statement CPU
    cost, paid while holding the row lock, was what limited a hot wallet
    (bench/wallet_debits.py)."""

    LOCK_SQL = "SELECT balance_minor, currency FROM wallets WHERE id = %s FOR UPDATE"
    INSERT_SQL = (
        "INSERT INTO ledger_entries (wallet_id, operation_id, amount_minor, kind, "
        "source_kind, source_id, memo, balance_after_minor, created_at) VALUES (%s, %s, "
        "%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (operation_id) DO NOTHING RETURNING id"
    )
    UPDATE_SQL = "UPDATE wallets SET balance_minor = %s, updated_at = %s WHERE id = %s"

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor

    @classmethod
    def for_session(cls) -> _HotPath:
        driver = db.session.connection().connection.driver_connection
        if driver is None:
            raise RuntimeError("the session's connection has no driver connection")
        return cls(driver.cursor())

    def lock(self, wallet_id: int) -> tuple[int, str] | None:
        self.cursor.execute(self.LOCK_SQL, (wallet_id,))
        row = self.cursor.fetchone()
        return (int(row[0]), str(row[1])) if row else None

    def insert_entry(
        self,
        wallet_id: int,
        operation_id: str,
        amount_minor: int,
        kind: LedgerKind,
        source: Source | None,
        memo: str,
        balance_after: int,
        now: datetime,
    ) -> int | None:
        self.cursor.execute(
            self.INSERT_SQL,
            (
                wallet_id,
                operation_id,
                amount_minor,
                kind.value,
                source.kind.value if source else None,
                source.id if source else None,
                memo,
                balance_after,
                now,
            ),
        )
        row = self.cursor.fetchone()
        return int(row[0]) if row else None

    def set_balance(self, wallet_id: int, balance_after: int, now: datetime) -> None:
        self.cursor.execute(self.UPDATE_SQL, (balance_after, now, wallet_id))


def _expire_cached(wallet_id: int) -> None:
    """A Wallet object already loaded in this session must not show the old balance."""
    cached = db.session.identity_map.get(db.session.identity_key(Wallet, wallet_id))
    if cached is not None:
        db.session.expire(cached)


def _existing(operation_id: str) -> LedgerEntry | None:
    return db.session.scalar(select(LedgerEntry).where(LedgerEntry.operation_id == operation_id))


def _replay(
    entry: LedgerEntry,
    wallet_id: int,
    amount_minor: int,
    kind: LedgerKind,
    source: Source | None,
    memo: str,
) -> Movement:
    """The earlier movement of this operation id, if it is this very movement; one key on
    another operation (a debit's key for an order's payment) is refused, never replayed."""
    if (entry.wallet_id, entry.amount_minor, entry.kind, entry.source, entry.memo) != (
        wallet_id,
        amount_minor,
        kind,
        source,
        memo[:200],
    ):
        raise OperationConflictError(
            f"operation id {entry.operation_id} was already used for another movement"
        )
    return Movement(
        entry.id,
        entry.wallet_id,
        entry.operation_id,
        entry.amount_minor,
        entry.balance_after_minor,
        is_replay=True,
    )


def wallet_of(customer: Customer, currency: str) -> Wallet:
    wallet = db.session.scalar(
        select(Wallet).where(Wallet.customer_id == customer.id, Wallet.currency == currency.upper())
    )
    if wallet is None:
        raise WalletNotFoundError(f"you have no {currency.upper()} wallet")
    return wallet


def debit(
    wallet: Wallet,
    amount_minor: object,
    operation_id: str,
    *,
    memo: str = "",
) -> Movement:
    """Take `amount_minor` from the wallet once per operation id (a client's debit, with
    its text as the memo). Commits.

    Raises InsufficientFundsError (nothing written) and the other WalletErrors.
    """
    return _commit_movement(wallet, -_positive(amount_minor), operation_id, memo, LedgerKind.DEBIT)


def credit(
    wallet: Wallet,
    amount_minor: object,
    operation_id: str,
    *,
    memo: str = "",
) -> Movement:
    """Add `amount_minor` to the wallet once per operation id, as an adjustment no
    movement of ours made (a seeded opening balance). Commits."""
    return _commit_movement(
        wallet, _positive(amount_minor), operation_id, memo, LedgerKind.ADJUSTMENT
    )


def _commit_movement(
    wallet: Wallet, amount_minor: int, operation_id: str, memo: str, kind: LedgerKind
) -> Movement:
    """One movement as its own transaction: committed, or rolled back with the error."""
    try:
        movement = apply_movement(
            _id_of(wallet),
            amount_minor,
            None,
            operation_id=operation_id,
            kind=kind,
            memo=memo,
        )
    except WalletError as exc:
        db.session.rollback()
        metrics.WALLET_OPERATIONS.labels(kind.value, exc.code).inc()
        raise
    db.session.commit()
    metrics.WALLET_OPERATIONS.labels(kind.value, "replay" if movement.is_replay else "ok").inc()
    return movement


def _id_of(wallet: Wallet) -> int:
    # The identity, without reloading an object expired by the last commit.
    identity: tuple[Any, ...] | None = sa_inspect(wallet).identity
    return int(identity[0]) if identity else wallet.id


def _positive(amount_minor: object) -> int:
    if isinstance(amount_minor, bool) or not isinstance(amount_minor, int) or amount_minor <= 0:
        raise WalletError("amount_minor must be a positive integer")
    return amount_minor
