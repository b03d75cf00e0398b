"""The migrations are the schema: after `upgrade`, autogenerate finds nothing to add."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from flask import Flask
from flask_migrate import downgrade, upgrade
from sqlalchemy import Column, Integer, MetaData, create_engine, make_url, text
from sqlalchemy.exc import IntegrityError

from extensions import db
from services.books import rebuild
from tests.factories import make_customer, make_order, make_payment


def _drift(app: Flask, metadata: MetaData | None = None) -> list:
    with app.app_context(), db.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        return compare_metadata(context, metadata if metadata is not None else db.metadata)


def test_upgraded_database_matches_models(app: Flask) -> None:
    # The session database was created by `upgrade` alone.
    assert _drift(app) == []


def test_drift_is_detected_when_a_model_changes(app: Flask) -> None:
    # Guard against a comparison that cannot fail: a column the migration lacks shows up.
    changed = MetaData(naming_convention=db.metadata.naming_convention)
    for table in db.metadata.tables.values():
        table.to_metadata(changed)
    changed.tables["products"].append_column(Column("weight_grams", Integer))
    diffs = _drift(app, changed)
    assert [(d[0], d[2], d[3].name) for d in diffs] == [("add_column", "products", "weight_grams")]


def test_session_database_is_postgres(app: Flask) -> None:
    assert app.config["SQLALCHEMY_DATABASE_URI"].startswith("postgresql")


@pytest.fixture
def scratch_app(server_urls: dict[str, str], make_app: Any) -> Iterator[Flask]:
    """An app on a database of its own (same server, empty): migrations may go down there."""
    owner = make_url(server_urls["database_owner"])
    admin = create_engine(owner, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text("DROP DATABASE IF EXISTS migrations_scratch"))
        conn.execute(text("CREATE DATABASE migrations_scratch"))

    def scratch(url: str) -> str:
        return make_url(url).set(database="migrations_scratch").render_as_string(False)

    yield make_app(
        SQLALCHEMY_DATABASE_URI=scratch(server_urls["database"]),
        DATABASE_OWNER_URL=scratch(server_urls["database_owner"]),
    )
    with admin.connect() as conn:
        conn.execute(text("DROP DATABASE IF EXISTS migrations_scratch WITH (FORCE)"))
    admin.dispose()


def test_the_status_checks_take_requires_action_and_downgrade_maps_it(scratch_app: Flask) -> None:
    """0006 widened the CHECKs of the status columns; its downgrade maps the new status."""
    with scratch_app.app_context():
        upgrade()
        payment_id = make_payment(make_order(make_customer())).id
        db.session.commit()
        set_status = text("UPDATE payments SET status = :status WHERE id = :id")
        db.session.execute(set_status, {"status": "requires_action", "id": payment_id})
        db.session.commit()
        with pytest.raises(IntegrityError):
            db.session.execute(set_status, {"status": "bogus", "id": payment_id})
        db.session.rollback()
        db.session.remove()
        downgrade(revision="0005")  # the payment waiting for its customer becomes unknown
        status = db.session.execute(text("SELECT status FROM payments")).scalar()
        db.session.remove()
        assert status == "unknown"
        upgrade()
        assert _drift(scratch_app) == []


def test_0022_reads_our_own_references_as_sources_and_keeps_a_clients_text_as_memo(
    scratch_app: Flask,
) -> None:
    """Before 0022 our postings were named by text ("refund 12"), in the column where a
    client's debit kept its own text: only the kinds a client cannot write are read."""
    with scratch_app.app_context():
        upgrade(revision="0021")
        # Raw rows: the models are the newest schema's.
        customer_id = db.session.execute(
            text(
                "INSERT INTO customers (email, password_hash, created_at) "
                "VALUES ('old@example.com', 'x', now()) RETURNING id"
            )
        ).scalar_one()
        wallet_id = db.session.execute(
            text(
                "INSERT INTO wallets (customer_id, currency, balance_minor, updated_at) "
                "VALUES (:c, 'EUR', 0, now()) RETURNING id"
            ),
            {"c": customer_id},
        ).scalar_one()
        rows = [  # (operation id, kind, reference)
            ("seed", "topup", "demo opening balance"),
            ("topup:5", "topup", "payment 5"),
            ("refund:12", "refund", "refund 12"),
            ("dispute:2:1:withdrawn", "dispute", "dispute 2"),
            ("k1", "order", "order 9"),
            ("k2", "debit", "refund 12"),
            ("k3", "debit", "payment 5"),
        ]
        for operation_id, kind, reference in rows:
            db.session.execute(
                text(
                    "INSERT INTO ledger_entries (wallet_id, operation_id, amount_minor, kind, "
                    "reference, balance_after_minor, created_at) VALUES (:w, :o, 1, :k, :r, 1, "
                    "now())"
                ),
                {"w": wallet_id, "o": operation_id, "k": kind, "r": reference},
            )
        db.session.commit()
        db.session.remove()
        upgrade(revision="0022")
        found = db.session.execute(
            text(
                "SELECT operation_id, kind, source_kind, source_id, memo FROM ledger_entries "
                "ORDER BY id"
            )
        ).all()
        db.session.remove()
        assert [tuple(r) for r in found] == [
            ("seed", "adjustment", None, None, "demo opening balance"),
            ("topup:5", "topup", "payment", 5, ""),
            ("refund:12", "refund", "refund", 12, ""),
            ("dispute:2:1:withdrawn", "dispute", "dispute", 2, ""),
            ("k1", "order", "order", 9, ""),
            ("k2", "debit", None, None, "refund 12"),  # the client's text, still only text
            ("k3", "debit", None, None, "payment 5"),
        ]
        downgrade(revision="0021")
        back = db.session.execute(
            text("SELECT operation_id, kind, reference FROM ledger_entries ORDER BY id")
        ).all()
        db.session.remove()
        assert [tuple(r) for r in back] == rows
        upgrade()


def test_0027_files_each_call_under_the_row_it_was_about_and_goes_back(
    scratch_app: Flask,
) -> None:
    """Before 0027 a refund's calls were logged under its payment's id, as "payment_id":
    they are filed under their refund (found by its key), a charge's under its payment."""
    from tests.factories import make_refund

    with scratch_app.app_context():
        upgrade(revision="0026")
        make_payment(make_order(make_customer()))  # so that ids of payments and refunds differ
        payment = make_payment(make_order(make_customer()))
        refund = make_refund(payment)
        db.session.commit()
        payment_id, refund_id = payment.id, refund.id
        assert payment_id != refund_id
        ids = {"p": payment_id, "key": str(refund.idempotency_key)}
        calls = [("lookup", ""), ("charge", ""), ("refund_lookup", ":key"), ("backfill", "")]
        for operation, key in calls:
            payment_column = "NULL" if operation == "backfill" else ":p"
            db.session.execute(
                text(
                    "INSERT INTO provider_calls (provider, operation, payment_id, "
                    "idempotency_key, started_at, duration_ms, outcome) VALUES ('stripe', "
                    f":op, {payment_column}, {key or 'NULL'}, now(), 1, 'Unknown')"
                ),
                {**ids, "op": operation},
            )
        db.session.commit()
        db.session.remove()
        read = text("SELECT operation, subject_kind, subject_id FROM provider_calls ORDER BY id")
        upgrade(revision="0027")
        after = [tuple(r) for r in db.session.execute(read).all()]
        db.session.remove()
        assert after == [
            ("charge_lookup", "charge", payment_id),
            ("charge", "charge", payment_id),
            ("refund_lookup", "refund", refund_id),
            ("backfill", None, None),
        ]
        downgrade(revision="0026")
        back = db.session.execute(
            text("SELECT operation, payment_id FROM provider_calls ORDER BY id")
        ).all()
        db.session.remove()
        assert [tuple(r) for r in back] == [
            ("lookup", payment_id),
            ("charge", payment_id),
            ("refund_lookup", payment_id),
            ("backfill", None),
        ]


def test_0030_links_each_wallet_posting_to_its_ledger_entry_and_carries_the_rest_in(
    scratch_app: Flask,
) -> None:
    """Before 0030 a wallet's postings stood beside its ledger: those that exist (a
    top-up's success) are linked to their ledger entry, the movements that posted
    nothing (a client's debit, an opening balance) are carried in against adjustments."""
    with scratch_app.app_context():
        upgrade(revision="0029")
        run = lambda sql, **params: db.session.execute(text(sql), params)  # noqa: E731
        customer = run(
            "INSERT INTO customers (email, password_hash, created_at) "
            "VALUES ('old@example.com', 'x', now()) RETURNING id"
        ).scalar_one()
        wallet = run(
            "INSERT INTO wallets (customer_id, currency, balance_minor, updated_at) "
            "VALUES (:c, 'EUR', 700, now()) RETURNING id",
            c=customer,
        ).scalar_one()
        entries = {}
        for operation_id, amount, kind, source in (
            ("seed", 500, "adjustment", None),
            ("topup:5", 400, "topup", 5),
            ("k1", -200, "debit", None),
        ):
            entries[operation_id] = run(
                "INSERT INTO ledger_entries (wallet_id, operation_id, amount_minor, kind, "
                "source_kind, source_id, memo, balance_after_minor, created_at) VALUES (:w, "
                ":o, :a, :k, CASE WHEN CAST(:s AS bigint) IS NULL THEN NULL ELSE 'payment' END, "
                "CAST(:s AS bigint), '', 0, "
                "now()) RETURNING id",
                w=wallet,
                o=operation_id,
                a=amount,
                k=kind,
                s=source,
            ).scalar_one()
        success = run(
            "INSERT INTO journal_entries (source_kind, source_id, step, created_at) "
            "VALUES ('payment', 5, 'succeeded', now()) RETURNING id"
        ).scalar_one()
        run(
            "INSERT INTO postings (entry_id, account, amount_minor, currency) VALUES "
            "(:e, 'clearing:stripe', 400, 'EUR'), (:e, :wallet, -400, 'EUR')",
            e=success,
            wallet=f"wallet:{wallet}",
        )
        db.session.commit()
        db.session.remove()
        upgrade(revision="0030")
        read = (
            "SELECT e.source_kind, e.step, p.account, p.amount_minor, p.ledger_entry_id "
            "FROM postings p JOIN journal_entries e ON e.id = p.entry_id ORDER BY p.id"
        )
        after = [tuple(r) for r in db.session.execute(text(read)).all()]
        db.session.remove()
        account = f"wallet:{wallet}"
        assert after == [
            ("payment", "succeeded", "clearing:stripe", 400, None),
            ("payment", "succeeded", account, -400, entries["topup:5"]),
            ("ledger", "carried_in", account, -500, entries["seed"]),
            ("ledger", "carried_in", "adjustments", 500, None),
            ("ledger", "carried_in", account, 200, entries["k1"]),
            ("ledger", "carried_in", "adjustments", -200, None),
        ]
        assert rebuild.wallets() == (1, [])
        db.session.remove()
        downgrade(revision="0029")
        back = [tuple(r) for r in db.session.execute(text(read.replace(", p.ledger_entry_id", "")))]
        db.session.remove()
        assert back == [
            ("payment", "succeeded", "clearing:stripe", 400),
            ("payment", "succeeded", account, -400),
        ]
        upgrade()
        assert _drift(scratch_app) == []
