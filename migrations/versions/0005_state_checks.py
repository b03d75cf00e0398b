"""webhook states and ledger kinds are checked in the database, from their enums

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 02:45:00

"""
from alembic import op
import sqlalchemy as sa


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

WEBHOOK_STATES = ('pending', 'applied', 'ignored', 'rejected')
LEDGER_KINDS = ('topup', 'debit', 'order', 'reversal', 'refund')


def upgrade():
    with op.batch_alter_table('processed_webhooks', schema=None) as batch_op:
        batch_op.alter_column(
            'state',
            existing_type=sa.String(length=16),
            type_=sa.Enum(*WEBHOOK_STATES, name='webhook_state', native_enum=False, create_constraint=True, length=16),
            existing_nullable=False,
        )
    with op.batch_alter_table('ledger_entries', schema=None) as batch_op:
        batch_op.alter_column(
            'kind',
            existing_type=sa.String(length=16),
            type_=sa.Enum(*LEDGER_KINDS, name='ledger_kind', native_enum=False, create_constraint=True, length=16),
            existing_nullable=False,
        )


def downgrade():
    with op.batch_alter_table('ledger_entries', schema=None) as batch_op:
        batch_op.alter_column('kind', existing_type=sa.Enum(*LEDGER_KINDS, name='ledger_kind', native_enum=False, create_constraint=True, length=16), type_=sa.String(length=16), existing_nullable=False)
    with op.batch_alter_table('processed_webhooks', schema=None) as batch_op:
        batch_op.alter_column('state', existing_type=sa.Enum(*WEBHOOK_STATES, name='webhook_state', native_enum=False, create_constraint=True, length=16), type_=sa.String(length=16), existing_nullable=False)
