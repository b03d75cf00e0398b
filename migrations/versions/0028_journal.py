"""journal: the books' double-entry journal (journal_entries, postings): an entry is
UNIQUE by its movement's step, its postings sum to zero per currency when the
transaction commits (a deferred constraint trigger), and nothing posted is changed or
deleted

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-06 05:20:00

"""
from alembic import op
import sqlalchemy as sa

revision = '0028'
down_revision = '0027'
branch_labels = None
depends_on = None

SOURCE_KINDS = ('payment', 'refund', 'dispute', 'order')
NAME = '[a-z][a-z0-9_]*'
ACCOUNT = (
    f'^(revenue|refunds|disputes|wallet:[1-9][0-9]*|clearing:{NAME}|fees:{NAME}|bank:{NAME})$'
)

BALANCED = """
CREATE FUNCTION journal_entry_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    entry bigint := (to_jsonb(NEW) ->> TG_ARGV[0])::bigint;  -- the entry's id column
    legs integer;
    unbalanced text;
BEGIN
    -- One read of the entry's postings: how many, and the currencies that do not net.
    SELECT coalesce(sum(n), 0),
        string_agg(currency || ' ' || total, ', ') FILTER (WHERE total <> 0)
    INTO legs, unbalanced
    FROM (
        SELECT currency, count(*) AS n, sum(amount_minor) AS total FROM postings
        WHERE entry_id = entry GROUP BY currency
    ) AS per_currency;
    IF legs < 2 OR unbalanced IS NOT NULL THEN
        RAISE EXCEPTION 'journal entry % does not balance: % postings, off by %',
            entry, legs, coalesce(unbalanced, 'nothing')
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$;
"""
APPEND_ONLY = """
CREATE FUNCTION journal_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the journal is append-only: % on %', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END $$;
"""


def upgrade():
    op.create_table(
        'journal_entries',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('source_kind', sa.Enum(*SOURCE_KINDS, name='journal_source_kind',
                                         native_enum=False, create_constraint=True,
                                         length=16), nullable=False),
        sa.Column('source_id', sa.BigInteger(), nullable=False),
        sa.Column('step', sa.String(length=32), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_journal_entries')),
        sa.UniqueConstraint('source_kind', 'source_id', 'step',
                            name=op.f('uq_journal_entries_source_kind_source_id_step')),
    )
    op.create_table(
        'postings',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('entry_id', sa.Integer(), nullable=False),
        sa.Column('account', sa.String(length=64), nullable=False),
        sa.Column('amount_minor', sa.BigInteger(), nullable=False),
        sa.Column('currency', sa.String(length=3), nullable=False),
        sa.CheckConstraint('amount_minor <> 0', name=op.f('ck_postings_amount_non_zero')),
        sa.CheckConstraint(f"account ~ '{ACCOUNT}'", name=op.f('ck_postings_account_address')),
        sa.CheckConstraint("currency ~ '^[A-Z]{3}$'", name=op.f('ck_postings_currency_code')),
        sa.ForeignKeyConstraint(['entry_id'], ['journal_entries.id'],
                                name=op.f('fk_postings_entry_id_journal_entries')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_postings')),
    )
    op.create_index(op.f('ix_postings_entry_id'), 'postings', ['entry_id'])
    op.create_index('ix_postings_account_currency', 'postings', ['account', 'currency'])
    op.execute(BALANCED)
    op.execute(APPEND_ONLY)
    for table, entry_column in (('journal_entries', 'id'), ('postings', 'entry_id')):
        op.execute(
            f"CREATE CONSTRAINT TRIGGER {table}_balanced AFTER INSERT ON {table} "
            "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
            f"EXECUTE FUNCTION journal_entry_balanced('{entry_column}')"
        )
        op.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION journal_append_only()"
        )


def downgrade():
    op.drop_table('postings')
    op.drop_table('journal_entries')
    op.execute('DROP FUNCTION journal_append_only()')
    op.execute('DROP FUNCTION journal_entry_balanced()')
