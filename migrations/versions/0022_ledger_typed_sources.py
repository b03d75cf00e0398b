"""ledger_typed_sources: a posting names the movement it belongs to by typed columns
(source_kind, source_id), never by text a client can write; the client's text (a
debit's reference) is a memo, shown and never matched. A seeded opening balance is an
adjustment (no movement of ours made it).

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-04 19:00:00

"""

from alembic import op
import sqlalchemy as sa

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

OLD_KINDS = ("topup", "debit", "order", "reversal", "refund", "dispute")
SOURCES = ("payment", "refund", "dispute", "order")
# kind -> the source it must name (None: none): models/ledger_entry.py SOURCE_OF_KIND
SOURCE_OF_KIND = (
    ("topup", "payment"),
    ("reversal", "payment"),
    ("order", "order"),
    ("refund", "refund"),
    ("dispute", "dispute"),
    ("debit", None),
    ("adjustment", None),
)
# Our own postings were named "<source> <id>" in `reference`; only the kinds a client
# can never write (a client's debit is kind 'debit') are read that way.
NAMED_BY = (
    ("('topup', 'reversal')", "payment"),
    ("('order')", "order"),
    ("('refund')", "refund"),
    ("('dispute')", "dispute"),
)


def _kinds(values):
    listed = ", ".join(f"'{v}'" for v in values)
    op.execute("ALTER TABLE ledger_entries DROP CONSTRAINT ck_ledger_entries_ledger_kind")
    op.execute(
        "ALTER TABLE ledger_entries ADD CONSTRAINT ck_ledger_entries_ledger_kind "
        f"CHECK (kind IN ({listed}))"
    )


def _source_check():
    cases = " ".join(
        f"WHEN '{kind}' THEN "
        + (f"source_kind IS NOT DISTINCT FROM '{source}'" if source else "source_kind IS NULL")
        for kind, source in SOURCE_OF_KIND
    )
    return f"(source_kind IS NULL) = (source_id IS NULL) AND CASE kind {cases} ELSE false END"


def upgrade():
    _kinds((*OLD_KINDS, "adjustment"))
    op.add_column(
        "ledger_entries",
        sa.Column(
            "source_kind",
            sa.Enum(
                *SOURCES,
                name="ledger_source_kind",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=True,
        ),
    )
    op.add_column("ledger_entries", sa.Column("source_id", sa.BigInteger(), nullable=True))
    op.alter_column("ledger_entries", "reference", new_column_name="memo")
    for kinds, source in NAMED_BY:
        op.execute(
            f"UPDATE ledger_entries SET source_kind = '{source}', "
            f"source_id = substring(memo from '^{source} ([0-9]+)$')::bigint, memo = '' "
            f"WHERE kind IN {kinds} AND memo ~ '^{source} [0-9]+$'"
        )
    # A credit that names no payment (the demo's opening balance) was made by no movement.
    op.execute(
        "UPDATE ledger_entries SET kind = 'adjustment' WHERE kind = 'topup' AND source_id IS NULL"
    )
    op.create_check_constraint(
        op.f("ck_ledger_entries_source_typed"), "ledger_entries", _source_check()
    )
    op.create_index("ix_ledger_entries_source", "ledger_entries", ["source_kind", "source_id"])


def downgrade():
    op.drop_index("ix_ledger_entries_source", table_name="ledger_entries")
    op.drop_constraint(op.f("ck_ledger_entries_source_typed"), "ledger_entries", type_="check")
    op.execute(
        "UPDATE ledger_entries SET memo = source_kind || ' ' || source_id "
        "WHERE source_kind IS NOT NULL"
    )
    op.execute("UPDATE ledger_entries SET kind = 'topup' WHERE kind = 'adjustment'")
    op.alter_column("ledger_entries", "memo", new_column_name="reference")
    op.drop_column("ledger_entries", "source_id")
    op.drop_column("ledger_entries", "source_kind")  # its CHECK goes with it
    _kinds(OLD_KINDS)
