"""Postings: a movement takes at most what the wallet holds, gives back exactly what its
postings took (read from the ledger), and a repeat of either moves nothing."""

from __future__ import annotations

from typing import Any

from flask import Flask

from extensions import db
from models import LedgerKind, Wallet
from services.movements import effects
from services.wallet import ledger
from tests.factories import make_customer, make_wallet


def _wallet(app: Flask, balance: int) -> int:
    with app.app_context():
        wallet = make_wallet(make_customer())
        db.session.commit()
        ledger.credit(wallet, balance, f"seed-{wallet.id}")
        return wallet.id


def _balance(wallet_id: int) -> int:
    wallet = db.session.get(Wallet, wallet_id, populate_existing=True)
    assert wallet is not None
    return wallet.balance_minor


def test_take_never_more_than_the_wallet_holds_and_give_back_only_what_was_taken(
    app_ctx: Flask,
) -> None:
    wallet_id = _wallet(app_ctx, 300)
    args: Any = {"kind": LedgerKind.DISPUTE, "reference": "dispute 1"}
    assert effects.take(wallet_id, 500, "EUR", operation_id="d1:take", **args) == 300
    assert _balance(wallet_id) == 0 and effects.posted("dispute 1") == -300
    assert effects.take(wallet_id, 500, "EUR", operation_id="d1:take2", **args) == 0  # empty
    db.session.commit()
    assert effects.give_back(wallet_id, "EUR", operation_id="d1:back", **args) == 300
    assert _balance(wallet_id) == 300 and effects.posted("dispute 1") == 0
    # Nothing is out any more: a second decision gives nothing back.
    assert effects.give_back(wallet_id, "EUR", operation_id="d1:back2", **args) == 0
    db.session.commit()
    assert _balance(wallet_id) == 300


def test_a_repeated_posting_moves_nothing(app_ctx: Flask) -> None:
    wallet_id = _wallet(app_ctx, 1000)
    args: Any = {"kind": LedgerKind.DISPUTE, "reference": "dispute 2"}
    effects.take(wallet_id, 400, "EUR", operation_id="d2:take", **args)
    effects.take(wallet_id, 400, "EUR", operation_id="d2:take", **args)  # the same id
    db.session.commit()
    assert _balance(wallet_id) == 600 and effects.posted("dispute 2") == -400
    assert effects.posted("dispute 3") == 0  # another movement's postings are its own
