"""A wallet is an account of the books: every ledger entry posts its journal entry in the
same transaction (the wallet's leg names the ledger entry), a repeat posts nothing, and
the database refuses a ledger entry without its posting or a wallet's posting without
its ledger entry, so a wallet's balance is what its account owes."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from extensions import db
from models import Account, LedgerEntry, LedgerKind, Posting, Source, SourceKind, Wallet
from services.books import journal
from services.wallet import ledger
from tests.factories import make_customer, make_wallet
from tests.helpers import got


def _postings() -> int:
    return int(db.session.scalar(select(func.count()).select_from(Posting)) or 0)


def test_a_clients_debit_and_an_adjustment_post_against_revenue_and_adjustments(
    app_ctx: Flask,
) -> None:
    target = make_wallet(make_customer())
    db.session.commit()
    credit = ledger.credit(target, 1000, "opening")
    debit = ledger.debit(target, 300, "client-1", memo="refund 12")  # a text, never a source
    account = Account.wallet(target.id)
    assert journal.entries_of(Source(SourceKind.LEDGER, credit.entry_id)) == {
        "adjustment": [(account, -1000, "EUR"), ("adjustments", 1000, "EUR")]
    }
    assert journal.entries_of(Source(SourceKind.LEDGER, debit.entry_id)) == {
        "debit": [(account, 300, "EUR"), ("revenue", -300, "EUR")]
    }
    linked = db.session.scalars(
        select(Posting.ledger_entry_id).where(Posting.account == account).order_by(Posting.id)
    ).all()
    assert linked == [credit.entry_id, debit.entry_id]
    # A repeat of either writes nothing, in the ledger or the books.
    before = _postings()
    assert ledger.debit(target, 300, "client-1", memo="refund 12").is_replay
    assert ledger.credit(target, 1000, "opening").is_replay
    assert _postings() == before
    assert journal.balances(account) == {(account, "EUR"): -got(Wallet, target.id).balance_minor}


def test_a_movement_names_its_legs_and_an_unbalanced_one_writes_nothing(app_ctx: Flask) -> None:
    target = make_wallet(make_customer())
    db.session.commit()
    ledger.credit(target, 500, "opening")
    source = Source(SourceKind.DISPUTE, 3)
    args: Any = {"kind": LedgerKind.DISPUTE, "source": source, "step": "withdrawn:1"}
    with pytest.raises(journal.UnbalancedEntryError, match="off by"):
        ledger.apply_movement(
            target.id, -200, "EUR", operation_id="d3", **args, against=[_leg(-100)]
        )
    db.session.rollback()
    assert got(Wallet, target.id).balance_minor == 500
    assert db.session.scalar(select(LedgerEntry).where(LedgerEntry.operation_id == "d3")) is None
    ledger.apply_movement(
        target.id, -200, "EUR", operation_id="d3", **args, against=[_leg(300), _leg(-500, True)]
    )
    db.session.commit()
    assert journal.entries_of(source)["withdrawn:1"] == [
        (Account.wallet(target.id), 200, "EUR"),
        ("disputes", 300, "EUR"),
        ("clearing:stripe", -500, "EUR"),
    ]


def _leg(amount: int, clearing: bool = False) -> journal.Leg:
    return journal.Leg(Account.clearing("stripe") if clearing else "disputes", amount, "EUR")


@pytest.mark.parametrize("kind", [LedgerKind.TOPUP, LedgerKind.REVERSAL])
def test_a_top_up_and_its_reversal_must_name_the_providers_account(
    app_ctx: Flask, kind: LedgerKind
) -> None:
    target = make_wallet(make_customer())
    with pytest.raises(ValueError, match="names the account it moves against"):
        ledger.apply_movement(
            target.id, 5, "EUR", operation_id="t", kind=kind, source=Source(SourceKind.PAYMENT, 1)
        )


def _raw_entry(target: Wallet) -> LedgerEntry:
    """A ledger entry of 0.05 written past the ledger (as a bug or a restore would)."""
    entry = LedgerEntry(
        wallet_id=target.id,
        operation_id="raw",
        amount_minor=5,
        kind=LedgerKind.ADJUSTMENT,
        balance_after_minor=5,
    )
    db.session.add(entry)
    db.session.flush()
    return entry


def test_the_database_refuses_a_ledger_entry_without_its_posting(app_ctx: Flask) -> None:
    _raw_entry(make_wallet(make_customer()))
    with pytest.raises(IntegrityError, match="has no posting on its account"):
        db.session.commit()
    db.session.rollback()


def test_the_database_refuses_a_posting_of_another_amount_for_a_ledger_entry(
    app_ctx: Flask,
) -> None:
    target = make_wallet(make_customer())
    entry = _raw_entry(target)
    legs = [
        journal.Leg(Account.wallet(target.id), -4, "EUR", entry.id),
        journal.Leg(Account.ADJUSTMENTS, 4, "EUR"),
    ]
    journal.post(Source(SourceKind.LEDGER, entry.id), "adjustment", legs)
    with pytest.raises(IntegrityError, match="has no posting on its account"):
        db.session.commit()
    db.session.rollback()
