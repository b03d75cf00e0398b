"""an index on the time of payment transitions (the overview's last-hour chart)

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01 07:00:00

"""
from alembic import op


revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('payment_transitions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_payment_transitions_created_at'), ['created_at'], unique=False)


def downgrade():
    with op.batch_alter_table('payment_transitions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_payment_transitions_created_at'))
