"""The journal: balanced entries, once per step, checked by the database too."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from sqlalchemy import Engine, event, func, select, text
from sqlalchemy.exc import DBAPIError, IntegrityError

from extensions import db
from models import Account, JournalEntry, Posting, Source, SourceKind
from services.books import journal
from services.books.journal import Leg

SOURCE = Source(SourceKind.PAYMENT, 7)
CHARGE = [Leg(Account.clearing("stripe"), 1400, "EUR"), Leg(Account.REVENUE, -1400, "EUR")]


def _count(model: object) -> int:
    return int(db.session.scalar(select(func.count()).select_from(model)) or 0)  # type: ignore[arg-type]  # a mapped class


def test_an_entry_is_posted_once_per_step(app_ctx: Flask) -> None:
    assert journal.post(SOURCE, "succeeded", CHARGE)
    assert not journal.post(SOURCE, "succeeded", CHARGE)  # a repeat: nothing written
    db.session.commit()
    assert (_count(JournalEntry), _count(Posting)) == (1, 2)
    assert journal.entries_of(SOURCE) == {
        "succeeded": [("clearing:stripe", 1400, "EUR"), ("revenue", -1400, "EUR")]
    }
    assert journal.balances() == {("clearing:stripe", "EUR"): 1400, ("revenue", "EUR"): -1400}
    assert journal.trial_balance() == {"EUR": 0}


def test_many_entries_are_posted_at_once_each_once(app_ctx: Flask) -> None:
    fees = [Leg(Account.fees("stripe"), 46, "EUR"), Leg(Account.clearing("stripe"), -46, "EUR")]
    entries = [
        (Source(SourceKind.BALANCE, n), "fee", fees) for n in range(1, 1203)
    ]  # over a thousand: two statements
    assert journal.post_many(entries) == 1202
    assert journal.post_many([*entries[:5], (SOURCE, "succeeded", CHARGE)]) == 1  # repeats
    db.session.commit()
    assert (_count(JournalEntry), _count(Posting)) == (1203, 2406)
    assert journal.balances(Account.fees("stripe")) == {("fees:stripe", "EUR"): 46 * 1202}
    with pytest.raises(journal.UnbalancedEntryError):
        journal.post_many([(SOURCE, "reversed:1", fees), (SOURCE, "odd", fees[:1])])
    assert _count(JournalEntry) == 1203  # the balanced one before it was not written either


def test_a_zero_leg_is_left_out_and_the_error_says_what_is_off(app_ctx: Flask) -> None:
    legs = [*CHARGE, Leg(Account.wallet(4), 0, "EUR")]
    assert journal.post(SOURCE, "succeeded", legs)
    assert journal.post_many([(Source(SourceKind.REFUND, 7), "succeeded", legs)]) == 1
    db.session.commit()
    assert (_count(JournalEntry), _count(Posting)) == (2, 4)
    with pytest.raises(
        journal.UnbalancedEntryError, match=r"^payment 7 odd: 2 legs, off by \{'EUR': 100\}$"
    ):
        journal.post(
            SOURCE, "odd", [Leg("revenue", -1300, "EUR"), Leg("clearing:stripe", 1400, "EUR")]
        )
    with pytest.raises(
        journal.UnbalancedEntryError, match=r"^payment 7 lone: 0 legs, off by nothing$"
    ):
        journal.post_many([(SOURCE, "lone", [Leg("revenue", 0, "EUR")])])


def test_one_source_is_its_kind_and_its_id(app_ctx: Flask) -> None:
    refund = Source(SourceKind.REFUND, 7)
    journal.post(SOURCE, "succeeded", CHARGE)
    journal.post(
        refund, "succeeded", [Leg("refunds", 100, "EUR"), Leg("clearing:stripe", -100, "EUR")]
    )
    assert journal.entries_of(refund) == {
        "succeeded": [("refunds", 100, "EUR"), ("clearing:stripe", -100, "EUR")]
    }


@pytest.mark.parametrize(
    "legs",
    [
        [Leg("revenue", -1400, "EUR"), Leg("clearing:stripe", 1300, "EUR")],
        [Leg("revenue", -1400, "EUR"), Leg("clearing:stripe", 1400, "USD")],
        [Leg("revenue", -1400, "EUR")],
    ],
    ids=["amounts", "currencies", "one leg"],
)
def test_an_unbalanced_entry_is_refused_before_anything_is_written(
    app_ctx: Flask, legs: list[Leg]
) -> None:
    with pytest.raises(
        journal.UnbalancedEntryError, match=r"^payment 7 succeeded: \d legs, off by "
    ):
        journal.post(SOURCE, "succeeded", legs)
    assert _count(JournalEntry) == 0


def test_the_database_refuses_an_unbalanced_entry_at_the_commit(app_ctx: Flask) -> None:
    entry_id = db.session.execute(
        text(
            "INSERT INTO journal_entries (source_kind, source_id, step, created_at) "
            "VALUES ('payment', 7, 'succeeded', now()) RETURNING id"
        )
    ).scalar()
    db.session.execute(
        text(
            "INSERT INTO postings (entry_id, account, amount_minor, currency) "
            "VALUES (:e, 'revenue', -1400, 'EUR'), (:e, 'clearing:stripe', 1399, 'EUR')"
        ),
        {"e": entry_id},
    )
    with pytest.raises(IntegrityError, match="does not balance"):
        db.session.commit()
    db.session.rollback()
    db.session.execute(
        text(
            "INSERT INTO journal_entries (source_kind, source_id, step, created_at) "
            "VALUES ('payment', 7, 'succeeded', now())"
        )
    )
    with pytest.raises(IntegrityError, match="0 postings"):  # an entry of no postings
        db.session.commit()
    db.session.rollback()
    assert _count(JournalEntry) == 0


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE postings SET amount_minor = amount_minor * 2",
        "DELETE FROM postings",
        "UPDATE journal_entries SET step = 'failed'",
        "DELETE FROM journal_entries",
    ],
)
def test_a_posted_entry_is_never_changed(
    app_ctx: Flask, owner_engine: Engine, statement: str
) -> None:
    journal.post(SOURCE, "succeeded", CHARGE)
    db.session.commit()
    with pytest.raises(DBAPIError, match="permission denied"):  # the app's role may not
        db.session.execute(text(statement))
    db.session.rollback()
    with pytest.raises(DBAPIError, match="append-only"), owner_engine.begin() as conn:
        conn.execute(text(statement))  # nor may the owner: the trigger refuses it
    assert journal.balances()[("revenue", "EUR")] == -1400


@pytest.mark.parametrize("address", ["wallet:abc", "wallet:0", "Revenue", "cash", "fees:"])
def test_only_the_chart_of_accounts_can_be_posted_to(app_ctx: Flask, address: str) -> None:
    with pytest.raises(IntegrityError, match="account_address"):
        journal.post(SOURCE, "succeeded", [Leg(address, 5, "EUR"), Leg("revenue", -5, "EUR")])
    db.session.rollback()
    with pytest.raises(ValueError, match="not an account"):
        Account.clearing("Stripe; DROP")


def test_a_reversal_mirrors_what_was_posted(app_ctx: Flask) -> None:
    legs = [Leg(Account.clearing("stripe"), 700, "EUR"), Leg(Account.REVENUE, -700, "EUR")]
    journal.post(SOURCE, "succeeded", legs)
    assert journal.reverse(SOURCE, "succeeded", "reversed:1")
    assert not journal.reverse(SOURCE, "succeeded", "reversed:1")  # a repeat
    assert not journal.reverse(SOURCE, "succeeded:2", "reversed:2")  # never posted
    assert journal.entries_of(SOURCE)["reversed:1"] == [
        ("clearing:stripe", -700, "EUR"),
        ("revenue", 700, "EUR"),
    ]
    other = Source(SourceKind.PAYMENT, 8)
    journal.post(other, "succeeded", CHARGE)
    db.session.commit()
    assert journal.balances(Account.REVENUE) == {("revenue", "EUR"): -1400}
    assert journal.trial_balance() == {"EUR": 0}


def test_a_wallets_posting_must_name_its_ledger_entry(app_ctx: Flask) -> None:
    """A wallet's account moves only with its wallet (services/wallet/ledger.py)."""
    legs = [Leg(Account.clearing("stripe"), 700, "EUR"), Leg(Account.wallet(3), -700, "EUR")]
    with pytest.raises(IntegrityError, match="ck_postings_wallet_leg_linked"):
        journal.post(SOURCE, "succeeded", legs)
    db.session.rollback()


def test_the_success_step_is_named_alike_in_sql_and_python(app_ctx: Flask) -> None:
    named = [
        db.session.scalar(
            text(journal.SUCCESS_STEP.join(["SELECT ", " FROM (SELECT :n AS effect_reversals) p"])),
            {"n": n},
        )
        for n in (0, 1, 2)
    ]
    assert (
        named
        == [journal.success_step(n) for n in (0, 1, 2)]
        == [
            "succeeded",
            "succeeded:2",
            "succeeded:3",
        ]
    )


def test_many_entries_are_written_a_chunk_at_a_time_and_all_counted(
    app_ctx: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal, "MANY", 2)
    fees = [Leg(Account.fees("stripe"), 46, "EUR"), Leg(Account.clearing("stripe"), -46, "EUR")]
    entries = [(Source(SourceKind.BALANCE, n), "fee", fees) for n in range(1, 6)]
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, sql: str, *_: Any) -> None:
        if sql.startswith("INSERT INTO journal_entries"):
            statements.append(sql)

    event.listen(db.engine, "before_cursor_execute", seen)
    try:
        assert journal.post_many(entries) == 5
    finally:
        event.remove(db.engine, "before_cursor_execute", seen)
    assert len(statements) == 3  # two, two and one
    db.session.commit()
    assert (_count(JournalEntry), _count(Posting)) == (5, 10)
    created = db.session.scalars(select(JournalEntry.created_at)).all()
    assert all(at is not None for at in created)
