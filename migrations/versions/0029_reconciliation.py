"""reconciliation: the provider's balance transactions as read, each day's result and
its items; the journal may name a balance transaction as an entry's source (its fee, a
payout), and its entries are read by day (an index on created_at)

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-06 07:00:00

"""
from alembic import op
import sqlalchemy as sa

revision = '0029'
down_revision = '0028'
branch_labels = None
depends_on = None

OLD_KINDS = ('payment', 'refund', 'dispute', 'order')
NEW_KINDS = OLD_KINDS + ('balance',)
OUTCOMES = ('matched', 'booked', 'missing_at_provider', 'missing_at_ours', 'amount_differs',
            'currency_differs', 'payout_differs', 'unreadable')


OLD_ALERTS = ('breaker_open', 'breaker_forced', 'provider_key', 'invalid_request', 'card_testing',
              'unknown_payments', 'emails_failing')


def _allow(table, column, name, values):
    listed = ", ".join(f"'{v}'" for v in values)
    op.execute(f'ALTER TABLE {table} DROP CONSTRAINT {name}')
    op.execute(f'ALTER TABLE {table} ADD CONSTRAINT {name} CHECK ({column} IN ({listed}))')


def upgrade():
    _allow('alerts', 'kind', 'ck_alerts_alert_kind', (*OLD_ALERTS, 'books_unreconciled'))
    _allow('journal_entries', 'source_kind', 'ck_journal_entries_journal_source_kind', NEW_KINDS)
    _allow('ledger_entries', 'source_kind', 'ck_ledger_entries_ledger_source_kind', NEW_KINDS)
    op.create_index(op.f('ix_journal_entries_created_at'), 'journal_entries', ['created_at'])
    op.create_table(
        'provider_balance_transactions',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('provider', sa.String(length=32), nullable=False),
        sa.Column('txn_id', sa.String(length=100), nullable=False),
        sa.Column('type', sa.String(length=32), nullable=False),
        sa.Column('category', sa.String(length=32), nullable=False),
        sa.Column('source_id', sa.String(length=100), nullable=False),
        sa.Column('payment_ref', sa.String(length=100), nullable=True),
        sa.Column('amount_minor', sa.BigInteger(), nullable=False),
        sa.Column('fee_minor', sa.BigInteger(), nullable=False),
        sa.Column('currency', sa.String(length=3), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('read_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_provider_balance_transactions')),
        sa.UniqueConstraint('provider', 'txn_id',
                            name=op.f('uq_provider_balance_transactions_provider_txn_id')),
    )
    op.create_index(op.f('ix_provider_balance_transactions_source_id'),
                    'provider_balance_transactions', ['source_id'])
    op.create_table(
        'reconciliation_days',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('provider', sa.String(length=32), nullable=False),
        sa.Column('day', sa.Date(), nullable=False),
        sa.Column('status', sa.Enum('reconciled', 'unreconciled', name='day_status',
                                    native_enum=False, create_constraint=True, length=16),
                  nullable=False),
        sa.Column('matched', sa.Integer(), nullable=False),
        sa.Column('unmatched', sa.Integer(), nullable=False),
        sa.Column('reconciled_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_reconciliation_days')),
        sa.UniqueConstraint('provider', 'day', name=op.f('uq_reconciliation_days_provider_day')),
    )
    op.create_table(
        'reconciliation_items',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('day_id', sa.Integer(), nullable=False),
        sa.Column('outcome', sa.Enum(*OUTCOMES, name='item_outcome', native_enum=False,
                                     create_constraint=True, length=24), nullable=False),
        sa.Column('provider_txn_id', sa.Integer(), nullable=True),
        sa.Column('entry_id', sa.Integer(), nullable=True),
        sa.Column('theirs_minor', sa.BigInteger(), nullable=True),
        sa.Column('ours_minor', sa.BigInteger(), nullable=True),
        sa.Column('currency', sa.String(length=3), nullable=True),
        sa.Column('detail', sa.String(length=200), nullable=False),
        sa.ForeignKeyConstraint(['day_id'], ['reconciliation_days.id'], ondelete='CASCADE',
                                name=op.f('fk_reconciliation_items_day_id_reconciliation_days')),
        sa.ForeignKeyConstraint(
            ['provider_txn_id'], ['provider_balance_transactions.id'],
            name=op.f('fk_reconciliation_items_provider_txn_id_provider_balance_transactions')),
        sa.ForeignKeyConstraint(['entry_id'], ['journal_entries.id'],
                                name=op.f('fk_reconciliation_items_entry_id_journal_entries')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_reconciliation_items')),
    )
    for column in ('day_id', 'provider_txn_id', 'entry_id'):
        op.create_index(op.f(f'ix_reconciliation_items_{column}'), 'reconciliation_items',
                        [column])


def downgrade():
    _allow('alerts', 'kind', 'ck_alerts_alert_kind', OLD_ALERTS)
    op.drop_table('reconciliation_items')
    op.drop_table('reconciliation_days')
    op.drop_table('provider_balance_transactions')
    op.drop_index(op.f('ix_journal_entries_created_at'), table_name='journal_entries')
    _allow('ledger_entries', 'source_kind', 'ck_ledger_entries_ledger_source_kind', OLD_KINDS)
    _allow('journal_entries', 'source_kind', 'ck_journal_entries_journal_source_kind', OLD_KINDS)
