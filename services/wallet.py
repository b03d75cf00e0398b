"""Wallet money movements: a balance changes only together with its ledger entry.

Each movement runs in the caller's transaction under a row lock on the wallet;
the ledger entry's UNIQUE operation_id makes a repeated operation return the
original result and change nothing. The CHECK (balance >= 0) is the last barrier.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import current_app
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from extensions import db
from models import LedgerEntry, Wallet
from models.money import InvalidAmountError, validate_money


class WalletError(ValueError):
    """A wallet operation was refused; `code` is stable for API clients."""

    code = "wallet_error"


class InsufficientFundsError(WalletError):
    code = "insufficient_funds"


class CurrencyMismatchError(WalletError):
    code = "currency_mismatch"


class OperationConflictError(WalletError):
    """The operation id was already used for a different movement."""

    code = "operation_id_reused"


class WalletNotFoundError(WalletError):
    code = "wallet_not_found"


@dataclass(frozen=True)
class Movement:
    """The result of a movement; `is_replay` when the operation id had been applied before."""

    entry_id: int
    wallet_id: int
    operation_id: str
    amount_minor: int
    balance_after_minor: int
    is_replay: bool


def lock_wallet(wallet_id: int) -> Wallet | None:
    return db.session.scalar(
        select(Wallet)
        .where(Wallet.id == wallet_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


def apply_movement(
    wallet_id: int,
    amount_minor: int,
    currency: str,
    *,
    operation_id: str,
    kind: str,
    reference: str = "",
) -> Movement:
    """Credit (positive) or debit (negative) a wallet exactly once per operation id.

    Runs in the caller's transaction and does not commit. Raises WalletError
    subclasses (nothing written) for bad amounts, currency mismatch, insufficient
    funds or an operation id reused for another movement.
    """
    try:
        validate_money(
            abs(amount_minor) if isinstance(amount_minor, int) else amount_minor,
            currency,
            max_minor=current_app.config["MAX_AMOUNT_MINOR"],
            allowed=current_app.config["CURRENCIES"],
        )
    except InvalidAmountError as exc:
        raise WalletError(str(exc)) from None
    if not operation_id or len(operation_id) > 100:
        raise WalletError("operation_id must be 1 to 100 characters")
    wallet = lock_wallet(wallet_id)
    if wallet is None:
        raise WalletNotFoundError(f"no wallet {wallet_id}")
    if wallet.currency != currency.upper():
        raise CurrencyMismatchError(
            f"wallet {wallet.id} holds {wallet.currency}, the amount is in {currency.upper()}"
        )
    if wallet.balance_minor + amount_minor < 0:
        # A repeat of a debit that succeeded earlier must get its original result,
        # not "insufficient funds" for money it already spent.
        earlier = _existing(operation_id)
        if earlier is not None:
            return _replay(earlier, wallet_id, amount_minor)
        raise InsufficientFundsError(
            f"balance {wallet.balance_minor} is less than {-amount_minor} {wallet.currency}"
        )
    entry = LedgerEntry(
        wallet_id=wallet.id,
        operation_id=operation_id,
        amount_minor=amount_minor,
        kind=kind,
        reference=reference[:200],
        balance_after_minor=wallet.balance_minor + amount_minor,
    )
    try:
        with db.session.begin_nested():
            db.session.add(entry)
            db.session.flush()
    except IntegrityError:
        # The operation id exists (UNIQUE): this is a repeat; report the original.
        earlier = _existing(operation_id)
        if earlier is None:
            raise
        return _replay(earlier, wallet_id, amount_minor)
    wallet.balance_minor = entry.balance_after_minor
    return Movement(
        entry.id, wallet.id, operation_id, amount_minor, entry.balance_after_minor, is_replay=False
    )


def _existing(operation_id: str) -> LedgerEntry | None:
    return db.session.scalar(select(LedgerEntry).where(LedgerEntry.operation_id == operation_id))


def _replay(entry: LedgerEntry, wallet_id: int, amount_minor: int) -> Movement:
    if entry.wallet_id != wallet_id or entry.amount_minor != amount_minor:
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
