"""exactly_once: every provider balance transaction matched to at most one entry and
every entry to at most one transaction (balance_matches, UNIQUE both ways); a payout's
contents stored, a transaction in at most one payout (payout_contents); a transaction
read again with another amount or fee kept beside its first read
(provider_balance_corrections); the evidence append-only and the books' tables refused
to TRUNCATE; the outcomes that name a second claimant, a correction, a vanished item
and a balance that differs

Revision ID: 0033
Revises: 0032
Create Date: 2026-12-08 00:40:00

"""
from alembic import op
import sqlalchemy as sa

revision = '0033'
down_revision = '0032'
branch_labels = None
depends_on = None

OLD_OUTCOMES = ('matched', 'booked', 'missing_at_provider', 'missing_at_ours', 'amount_differs',
                'currency_differs', 'payout_differs', 'unreadable')
NEW_OUTCOMES = OLD_OUTCOMES + ('duplicate', 'corrected', 'vanished', 'balance_differs')
EVIDENCE = ('provider_balance_transactions', 'balance_matches', 'payout_contents',
            'provider_balance_corrections')
# The tables nothing may empty in one statement (a TRUNCATE fires no row trigger).
NEVER_TRUNCATED = ('journal_entries', 'postings', 'ledger_entries') + EVIDENCE

FUNCTIONS = """
CREATE FUNCTION evidence_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the books'' evidence is append-only: % on %', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END $$;
CREATE FUNCTION books_never_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Only a throwaway test database empties its tables (tests/conftest.py sets this).
    IF coalesce(current_setting('payments.throwaway_database', true), '') <> 'on' THEN
        RAISE EXCEPTION 'the books are never emptied: TRUNCATE on %', TG_TABLE_NAME
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NULL;
END $$;
"""


def _allow(values):
    listed = ", ".join(f"'{v}'" for v in values)
    op.execute('ALTER TABLE reconciliation_items DROP CONSTRAINT ck_reconciliation_items_item_outcome')
    op.execute('ALTER TABLE reconciliation_items ADD CONSTRAINT '
               f'ck_reconciliation_items_item_outcome CHECK (outcome IN ({listed}))')


def _txn_fk(column, table):
    return sa.ForeignKeyConstraint([column], ['provider_balance_transactions.id'],
                                   name=op.f(f'fk_{table}_{column}_provider_balance_transactions'))


def upgrade():
    op.create_table(
        'balance_matches',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('provider_txn_id', sa.Integer(), nullable=False),
        sa.Column('entry_id', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        _txn_fk('provider_txn_id', 'balance_matches'),
        sa.ForeignKeyConstraint(['entry_id'], ['journal_entries.id'],
                                name=op.f('fk_balance_matches_entry_id_journal_entries')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_balance_matches')),
        sa.UniqueConstraint('provider_txn_id', name=op.f('uq_balance_matches_provider_txn_id')),
        sa.UniqueConstraint('entry_id', name=op.f('uq_balance_matches_entry_id')),
    )
    op.create_table(
        'payout_contents',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('payout_txn_id', sa.Integer(), nullable=False),
        sa.Column('txn_id', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        _txn_fk('payout_txn_id', 'payout_contents'),
        _txn_fk('txn_id', 'payout_contents'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_payout_contents')),
        sa.UniqueConstraint('txn_id', name=op.f('uq_payout_contents_txn_id')),
    )
    op.create_index(op.f('ix_payout_contents_payout_txn_id'), 'payout_contents',
                    ['payout_txn_id'])
    op.create_table(
        'provider_balance_corrections',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('provider_txn_id', sa.Integer(), nullable=False),
        sa.Column('n', sa.Integer(), nullable=False),
        sa.Column('amount_minor', sa.BigInteger(), nullable=False),
        sa.Column('fee_minor', sa.BigInteger(), nullable=False),
        sa.Column('read_at', sa.DateTime(timezone=True), nullable=False),
        _txn_fk('provider_txn_id', 'provider_balance_corrections'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_provider_balance_corrections')),
        sa.UniqueConstraint('provider_txn_id', 'n',
                            name=op.f('uq_provider_balance_corrections_provider_txn_id_n')),
    )
    # A day's transactions read before (which of them vanished from its listing).
    op.create_index('ix_provider_balance_transactions_provider_created_at',
                    'provider_balance_transactions', ['provider', 'created_at'])
    _allow(NEW_OUTCOMES)
    op.execute(FUNCTIONS)
    for table in EVIDENCE:
        op.execute(f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                   "FOR EACH ROW EXECUTE FUNCTION evidence_append_only()")
    for table in NEVER_TRUNCATED:
        op.execute(f"CREATE TRIGGER {table}_never_truncated BEFORE TRUNCATE ON {table} "
                   "FOR EACH STATEMENT EXECUTE FUNCTION books_never_truncated()")


def downgrade():
    for table in NEVER_TRUNCATED:
        op.execute(f'DROP TRIGGER {table}_never_truncated ON {table}')
    op.execute('DROP TRIGGER provider_balance_transactions_append_only '
               'ON provider_balance_transactions')
    op.execute("DELETE FROM reconciliation_items WHERE outcome IN "
               "('duplicate', 'corrected', 'vanished', 'balance_differs')")
    _allow(OLD_OUTCOMES)
    op.drop_index('ix_provider_balance_transactions_provider_created_at',
                  'provider_balance_transactions')
    op.drop_table('provider_balance_corrections')
    op.drop_table('payout_contents')
    op.drop_table('balance_matches')
    op.execute('DROP FUNCTION books_never_truncated()')
    op.execute('DROP FUNCTION evidence_append_only()')
