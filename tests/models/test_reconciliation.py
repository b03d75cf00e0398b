"""The reconciliation's records, as the database keeps them: a provider's transaction and
a provider's day once each, an item's outcome one of the named ones, and a day's items
gone with it."""

from __future__ import annotations

from datetime import date

import pytest
from flask import Flask
from sqlalchemy import Engine, func, select, text
from sqlalchemy.exc import IntegrityError

from extensions import db
from models import (
    DayStatus,
    ItemOutcome,
    ProviderBalanceTxn,
    ReconciliationDay,
    ReconciliationItem,
)
from models.types import utcnow


def _txn(txn_id: str = "txn_1") -> ProviderBalanceTxn:
    return ProviderBalanceTxn(
        provider="stripe",
        txn_id=txn_id,
        type="charge",
        category="charge",
        source_id="ch_1",
        amount_minor=1000,
        fee_minor=40,
        currency="EUR",
        created_at=utcnow(),
    )


def _day() -> ReconciliationDay:
    return ReconciliationDay(
        provider="stripe",
        day=date(2026, 12, 1),
        status=DayStatus.RECONCILED,
        matched=1,
        unmatched=0,
    )


def test_a_transaction_and_a_day_are_kept_once(app_ctx: Flask) -> None:
    db.session.add(_txn())
    db.session.commit()
    db.session.add(_txn())
    with pytest.raises(IntegrityError):
        db.session.commit()
    db.session.rollback()
    db.session.add_all([_day(), _day()])
    with pytest.raises(IntegrityError):
        db.session.commit()


def test_an_items_outcome_is_a_named_one_and_goes_with_its_day(
    app_ctx: Flask, owner_engine: Engine
) -> None:
    day = _day()
    db.session.add(day)
    db.session.flush()
    db.session.add(ReconciliationItem(day_id=day.id, outcome=ItemOutcome.BOOKED, detail="fee"))
    db.session.commit()
    with pytest.raises(IntegrityError):
        db.session.execute(
            text(
                "INSERT INTO reconciliation_items (day_id, outcome, detail) "
                "VALUES (:day, 'looks_fine', 'x')"
            ),
            {"day": day.id},
        )
    db.session.rollback()
    with owner_engine.begin() as conn:  # (the app's role deletes no day)
        conn.execute(text("DELETE FROM reconciliation_days"))
    assert db.session.scalar(select(func.count()).select_from(ReconciliationItem)) == 0
