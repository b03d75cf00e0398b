"""Balance against balance: what the provider holds at the day's end against our clearing
account, less what the day's items explain."""

from __future__ import annotations

import json

from flask import Flask
from sqlalchemy import Engine, text

from models import DayStatus, ItemOutcome
from services.statements import reconcile
from tests.books_support import (
    a_charge,
    named,
    today,
)
from tests.fault_proxy import REWRITE, FaultProxy

DAY = 86400


def test_a_balance_that_differs_from_ours_is_named_with_both(
    proxied: tuple[Flask, FaultProxy],
) -> None:
    app, proxy = proxied
    a_charge(app)

    def richer(body: bytes) -> bytes:
        balance = json.loads(body)
        balance["available"] = [{"amount": 5000, "currency": "eur", "source_types": {}}]
        return json.dumps(balance).encode()

    proxy.add(REWRITE, r"/v1/balance$", rewrite=richer, times=None)
    [differs] = named(app, today(), ItemOutcome.BALANCE_DIFFERS)
    assert (differs.theirs, differs.ours, differs.currency) == (5960, 960, "EUR")
    assert "€50.00 no item explains" in differs.detail


def test_a_fee_raised_on_both_legs_by_the_owner_is_found(
    proxied: tuple[Flask, FaultProxy], owner_engine: Engine
) -> None:
    """Past every trigger (the owner disabled them): the entry still balances, the day's
    items all agree, but the clearing account no longer says what the provider holds."""
    app, _ = proxied
    a_charge(app)
    with app.app_context():
        assert reconcile.reconcile("stripe", today()).status == DayStatus.RECONCILED
    with owner_engine.begin() as conn:
        conn.execute(text("ALTER TABLE postings DISABLE TRIGGER USER"))
        conn.execute(
            text(
                "UPDATE postings SET amount_minor = amount_minor + sign(amount_minor) * 100 "
                "WHERE account IN ('fees:stripe', 'clearing:stripe') AND entry_id IN "
                "(SELECT id FROM journal_entries WHERE step = 'fee')"
            )
        )
        conn.execute(text("ALTER TABLE postings ENABLE TRIGGER USER"))
    [differs] = named(app, today(), ItemOutcome.BALANCE_DIFFERS)
    assert (differs.theirs, differs.ours) == (960, 860)
