"""The history benchmark's filler writes the schema as the migrations made it: its SQL is
text no type checker reads (it wrote a column a migration had renamed, and the
benchmark failed before measuring anything)."""

from __future__ import annotations

from flask import Flask
from sqlalchemy import func, select

from bench import history_fill
from extensions import db
from models import Payment, ProviderCall, Wallet
from services.wallet.audit import audit_wallets


def test_a_small_history_loads_and_reads_back_as_the_product_sees_it(app: Flask) -> None:
    # A bulk load (COPY, the sequences set past it): the database's owner's work.
    url = app.config["DATABASE_OWNER_URL"] or app.config["SQLALCHEMY_DATABASE_URI"]
    now = history_fill.utc_now()
    with history_fill.connect(url) as conn:
        history_fill.load_present(conn, now)
        first = len(history_fill.LIVE_IDS) + 1
        history_fill.load_history(conn, first, 300, now)
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Payment)) == first - 1 + 300
        calls = db.session.execute(
            select(ProviderCall.subject_kind, func.count()).group_by(ProviderCall.subject_kind)
        ).all()
        assert dict(calls) == {"charge": 300}
        assert (db.session.scalar(select(func.count()).select_from(Wallet)) or 0) > 0
        assert audit_wallets().mismatches == []
