"""Wallet money movements under real concurrency (PostgreSQL, separate connections)."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from flask import Flask
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from extensions import db
from models import Account, LedgerEntry, LedgerKind, Source, SourceKind, Wallet
from models.money import Money
from services.books import journal
from services.wallet import ledger
from services.wallet.audit import audit_wallets
from tests.factories import make_customer, make_wallet
from tests.helpers import got, new_wallet


def debit_in_thread(
    app: Flask,
    wallet_id: int,
    amount: int,
    operation_id: str,
    results: list[Any],
    barrier: threading.Barrier,
) -> None:
    barrier.wait()  # all start together, then each takes its own connection
    with app.app_context():  # its own session and connection
        target = db.session.get(Wallet, wallet_id)
        try:
            results.append(ledger.debit(target, amount, operation_id))  # type: ignore[arg-type]  # the wallet row is loaded by the thread
        except ledger.WalletError as exc:
            results.append(exc.code)


def balance(app: Flask, wallet_id: int) -> int:
    with app.app_context():
        return int(
            db.session.scalar(select(Wallet.balance_minor).where(Wallet.id == wallet_id)) or 0
        )


def test_fifty_concurrent_debits_of_ten_against_a_hundred(app: Flask) -> None:
    wallet_id = new_wallet(app, 100)
    barrier = threading.Barrier(50, timeout=60)
    results: list[Any] = []
    threads = [
        threading.Thread(
            target=debit_in_thread, args=(app, wallet_id, 10, f"op-{i}", results, barrier)
        )
        for i in range(50)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(isinstance(r, ledger.Movement) for r in results) == 10
    assert results.count("insufficient_funds") == 40
    assert balance(app, wallet_id) == 0
    with app.app_context():
        balances_seen = db.session.scalars(select(LedgerEntry.balance_after_minor)).all()
        assert min(balances_seen) == 0  # never negative on the way
        account = Account.wallet(wallet_id)  # the books: its account owes nothing any more
        assert journal.balances(account) == {(account, "EUR"): 0}
        assert audit_wallets().is_ok


def test_one_operation_id_from_ten_threads_is_one_entry(app: Flask) -> None:
    wallet_id = new_wallet(app, 100)
    barrier = threading.Barrier(10, timeout=60)
    results: list[Any] = []
    threads = [
        threading.Thread(
            target=debit_in_thread, args=(app, wallet_id, 30, "same-op", results, barrier)
        )
        for _ in range(10)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({(r.entry_id, r.balance_after_minor) for r in results}) == 1
    assert sum(not r.is_replay for r in results) == 1
    assert balance(app, wallet_id) == 70
    with app.app_context():
        assert (
            db.session.scalar(
                select(func.count())
                .select_from(LedgerEntry)
                .where(LedgerEntry.operation_id == "same-op")
            )
            == 1
        )


def test_a_repeated_debit_returns_the_original_even_when_funds_are_gone(app_ctx: Flask) -> None:
    target = make_wallet(make_customer())
    db.session.commit()
    ledger.credit(target, 50, "in")
    first = ledger.debit(target, 50, "out")
    again = ledger.debit(target, 50, "out")
    assert again.is_replay and again.entry_id == first.entry_id
    assert again.balance_after_minor == 0
    with pytest.raises(ledger.OperationConflictError):
        ledger.debit(target, 20, "out")  # same id, other amount


@pytest.mark.parametrize(
    ("amount", "currency", "error"),
    [
        (0, "EUR", ledger.WalletError),
        (-5, "EUR", ledger.WalletError),
        (10_000_001, "EUR", ledger.WalletError),
        ("10", "EUR", ledger.WalletError),
        (1.5, "EUR", ledger.WalletError),
        (10, "USD", ledger.CurrencyMismatchError),
        (200, "EUR", ledger.InsufficientFundsError),
    ],
)
def test_bad_movements_are_refused_and_write_nothing(
    app_ctx: Flask, amount: Any, currency: str, error: type
) -> None:
    target = make_wallet(make_customer())
    db.session.commit()
    ledger.credit(target, 100, "seed")
    with pytest.raises(error):
        if currency == "EUR":
            ledger.debit(target, amount, "bad")
        else:
            ledger.apply_movement(
                target.id, -amount, currency, operation_id="bad", kind=LedgerKind.DEBIT
            )
    db.session.rollback()
    assert db.session.scalar(select(func.count()).select_from(LedgerEntry)) == 1
    assert got(Wallet, target.id).balance_minor == 100


OPERATIONS = st.lists(
    st.tuples(st.sampled_from(["topup", "debit", "repeat"]), st.integers(1, 60)),
    min_size=1,
    max_size=25,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(operations=OPERATIONS)
def test_random_mixed_workload_keeps_the_books_balanced(
    app: Flask, operations: list[tuple[str, int]]
) -> None:
    with app.app_context():
        target = make_wallet(make_customer(email=f"{uuid.uuid4()}@example.com"))
        db.session.commit()
        expected = 0
        done: list[tuple[str, int, str]] = []
        for kind, amount in operations:
            if kind == "repeat" and done:
                op_id, op_amount, op_kind = done[amount % len(done)]
                call = ledger.credit if op_kind == "topup" else ledger.debit
                assert call(target, op_amount, op_id).is_replay
                continue
            op_id = str(uuid.uuid4())
            if kind == "debit":
                try:
                    ledger.debit(target, amount, op_id)
                    expected -= amount
                    done.append((op_id, amount, "debit"))
                except ledger.InsufficientFundsError:
                    assert amount > expected
            else:
                ledger.credit(target, amount, op_id)
                expected += amount
                done.append((op_id, amount, "topup"))
        assert got(Wallet, target.id).balance_minor == expected
        assert audit_wallets().is_ok


def replayed(original: ledger.Movement) -> ledger.Movement:
    return ledger.Movement(
        original.entry_id,
        original.wallet_id,
        original.operation_id,
        original.amount_minor,
        original.balance_after_minor,
        is_replay=True,
    )


def _message(call: Any) -> str:
    with pytest.raises(ledger.WalletError) as refused:
        call()
    db.session.rollback()
    return str(refused.value)


def test_each_refusal_says_what_was_wrong(app_ctx: Flask) -> None:
    target = make_wallet(make_customer())
    db.session.commit()
    wallet_id = target.id
    ledger.credit(target, 100, "seed")

    def move(amount: Any, operation_id: str = "op", currency: str | None = "EUR") -> Any:
        return lambda: ledger.apply_movement(
            wallet_id, amount, currency, operation_id=operation_id, kind=LedgerKind.DEBIT
        )

    assert _message(lambda: ledger.debit(target, 0, "op")) == (
        "amount_minor must be a positive integer"
    )
    assert _message(move("12")) == "amount_minor must be an integer number of minor units"
    assert _message(move(-1_000_001)) == "The amount must be at most €10,000.00."
    assert _message(move(-1, "")) == "operation_id must be 1 to 100 characters"
    assert _message(move(-1, "x" * 101)) == "operation_id must be 1 to 100 characters"
    assert _message(move(-1, currency="usd")) == (
        f"wallet {wallet_id} holds EUR, the amount is in USD"
    )
    assert _message(move(-200)) == "the balance €1.00 is less than €2.00"
    assert (
        _message(
            lambda: ledger.apply_movement(
                2_000_000_000, 1, None, operation_id="op", kind=LedgerKind.ADJUSTMENT
            )
        )
        == "no wallet 2000000000"
    )
    assert (
        ledger.apply_movement(  # the longest operation id, in the wallet's own currency
            wallet_id, -1, None, operation_id="x" * 100, kind=LedgerKind.DEBIT
        ).balance_after_minor
        == 99
    )
    db.session.commit()
    assert _message(lambda: ledger.credit(target, 5, "x" * 100)) == (
        f"operation id {'x' * 100} was already used for another movement"
    )


def test_a_movement_keeps_its_source_and_memo_and_a_replay_is_the_original_whole(
    app_ctx: Flask,
) -> None:
    target = make_wallet(make_customer())
    db.session.commit()
    plain = ledger.credit(target, 10, "plain")
    ledger.debit(target, 1, "debited", memo="refund 7")
    order = Source(SourceKind.ORDER, 7)
    ordered = ledger.apply_movement(
        target.id, -4, None, operation_id="ordered", kind=LedgerKind.ORDER, source=order
    )
    db.session.commit()
    assert ledger.apply_movement(
        target.id, -4, None, operation_id="ordered", kind=LedgerKind.ORDER, source=order
    ) == replayed(ordered)
    assert ledger.credit(target, 10, "plain") == replayed(plain)
    # The same operation id with another memo, or as another source, is another movement.
    with pytest.raises(ledger.OperationConflictError):
        ledger.debit(target, 1, "debited", memo="refund 8")
    with pytest.raises(ledger.OperationConflictError):
        ledger.apply_movement(
            target.id,
            -4,
            None,
            operation_id="ordered",
            kind=LedgerKind.ORDER,
            source=Source(SourceKind.ORDER, 8),
        )
    rows = db.session.execute(
        select(
            LedgerEntry.operation_id,
            LedgerEntry.kind,
            LedgerEntry.source_kind,
            LedgerEntry.source_id,
            LedgerEntry.memo,
        ).order_by(LedgerEntry.id)
    ).all()
    assert [tuple(r) for r in rows] == [
        ("plain", LedgerKind.ADJUSTMENT, None, None, ""),
        ("debited", LedgerKind.DEBIT, None, None, "refund 7"),  # text, not a refund's
        ("ordered", LedgerKind.ORDER, SourceKind.ORDER, 7, ""),
    ]


@pytest.mark.parametrize(
    ("kind", "source"),
    [
        (LedgerKind.TOPUP, None),
        (LedgerKind.REFUND, Source(SourceKind.PAYMENT, 1)),
        (LedgerKind.DEBIT, Source(SourceKind.REFUND, 1)),
        (LedgerKind.ADJUSTMENT, Source(SourceKind.ORDER, 1)),
    ],
)
def test_a_posting_names_the_source_its_kind_requires(
    app_ctx: Flask, kind: LedgerKind, source: Source | None
) -> None:
    target = make_wallet(make_customer())
    db.session.commit()
    with pytest.raises(ValueError, match="posting names"):
        ledger.apply_movement(target.id, 5, None, operation_id="x", kind=kind, source=source)


@pytest.mark.parametrize(
    ("kind", "source_kind", "source_id"),
    [
        (LedgerKind.TOPUP, None, None),  # a top-up names its payment
        (LedgerKind.DEBIT, SourceKind.REFUND, 1),  # a client's debit names nothing of ours
        (LedgerKind.REFUND, SourceKind.PAYMENT, 1),  # a refund's posting names its refund
        (LedgerKind.DISPUTE, SourceKind.DISPUTE, None),  # a kind without an id
    ],
)
def test_the_database_refuses_a_posting_whose_source_does_not_fit_its_kind(
    app_ctx: Flask, kind: LedgerKind, source_kind: SourceKind | None, source_id: int | None
) -> None:
    target = make_wallet(make_customer())
    db.session.commit()
    db.session.add(
        LedgerEntry(
            wallet_id=target.id,
            operation_id="raw",
            amount_minor=5,
            kind=kind,
            source_kind=source_kind,
            source_id=source_id,
            balance_after_minor=5,
        )
    )
    with pytest.raises(IntegrityError, match="source_typed"):
        db.session.flush()
    db.session.rollback()


def test_a_wallet_already_loaded_shows_the_new_balance(app_ctx: Flask) -> None:
    target = make_wallet(make_customer())
    db.session.commit()
    assert target.balance_minor == 0  # loaded in this session
    ledger.apply_movement(target.id, 300, None, operation_id="in", kind=LedgerKind.ADJUSTMENT)
    assert target.balance_minor == 300  # not the 0 it was loaded with


def _operations(kind: str, result: str) -> float:
    return (
        REGISTRY.get_sample_value("wallet_operations_total", {"kind": kind, "result": result})
        or 0.0
    )


def test_each_movement_is_counted_by_its_kind_and_result(app_ctx: Flask) -> None:
    target = make_wallet(make_customer())
    db.session.commit()
    counted = {
        key: _operations(*key)
        for key in [("adjustment", "ok"), ("adjustment", "replay"), ("debit", "insufficient_funds")]
    }
    ledger.credit(target, 10, "in")
    ledger.credit(target, 10, "in")
    with pytest.raises(ledger.InsufficientFundsError) as refused:
        ledger.debit(target, 50, "out")
    assert refused.value.code == "insufficient_funds"
    assert {key: _operations(*key) - before for key, before in counted.items()} == {
        ("adjustment", "ok"): 1,
        ("adjustment", "replay"): 1,
        ("debit", "insufficient_funds"): 1,
    }


def test_a_movement_says_what_it_wrote_and_short_of_funds_says_the_balance(
    app_ctx: Flask,
) -> None:
    target = make_wallet(make_customer())
    db.session.commit()
    long_memo = "r" * 250
    moved = ledger.credit(target, 100, "in", memo=long_memo)
    entry = db.session.scalar(select(LedgerEntry))
    assert entry is not None and entry.memo == "r" * 200  # the column's length
    assert moved == ledger.Movement(entry.id, target.id, "in", 100, 100, is_replay=False)
    with pytest.raises(ledger.InsufficientFundsError) as refused:
        ledger.debit(target, 101, "out")
    assert refused.value.details == {"balance": Money(100, "EUR")}


def test_a_customers_wallet_is_their_own(app_ctx: Flask) -> None:
    first, second = make_customer(), make_customer()
    make_wallet(first)
    theirs = make_wallet(second)
    db.session.commit()
    assert ledger.wallet_of(second, "eur") == theirs
    with pytest.raises(ledger.WalletNotFoundError) as refused:
        ledger.wallet_of(second, "usd")
    assert str(refused.value) == "you have no USD wallet"
