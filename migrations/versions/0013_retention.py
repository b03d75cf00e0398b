"""retention: an archive for the transitions of long-final payments; sent emails by age

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01 12:50:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

STATUSES = ('pending', 'unknown', 'requires_action', 'succeeded', 'failed', 'needs_review')
SOURCES = ('checkout', 'charge', 'reconcile', 'webhook', 'admin')


def upgrade():
    op.create_table(
        'payment_transitions_archive',
        sa.Column('id', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('payment_id', sa.Integer(), nullable=False),
        sa.Column('from_status', sa.Enum(*STATUSES, name='archived_from_status', native_enum=False, create_constraint=True, length=16), nullable=True),
        sa.Column('to_status', sa.Enum(*STATUSES, name='archived_to_status', native_enum=False, create_constraint=True, length=16), nullable=False),
        sa.Column('source', sa.Enum(*SOURCES, name='archived_source', native_enum=False, create_constraint=True, length=16), nullable=False),
        sa.Column('reason', sa.String(length=500), nullable=False),
        sa.Column('actor', sa.String(length=254), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['payment_id'], ['payments.id'], name=op.f('fk_payment_transitions_archive_payment_id_payments')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_payment_transitions_archive')),
    )
    with op.batch_alter_table('payment_transitions_archive', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_payment_transitions_archive_payment_id'), ['payment_id'], unique=False)
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_outbox_created_at'), ['created_at'], unique=False)


def downgrade():
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_outbox_created_at'))
    op.drop_table('payment_transitions_archive')
