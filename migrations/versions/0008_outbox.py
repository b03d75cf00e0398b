"""the email outbox

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 06:00:00

"""
from alembic import op
import sqlalchemy as sa


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

KINDS = ('welcome', 'receipt', 'wallet_receipt', 'payment_failed', 'refund', 'review_alert')
STATUSES = ('pending', 'sent', 'failed')


def upgrade():
    op.create_table('outbox',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.Enum(*KINDS, name='email_kind', native_enum=False, create_constraint=True, length=24), nullable=False),
    sa.Column('subject_id', sa.Integer(), nullable=False),
    sa.Column('recipient', sa.String(length=254), nullable=False),
    sa.Column('status', sa.Enum(*STATUSES, name='outbox_status', native_enum=False, create_constraint=True, length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('last_error', sa.String(length=500), nullable=True),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('sent_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_outbox')),
    sa.UniqueConstraint('kind', 'subject_id', name=op.f('uq_outbox_kind_subject_id'))
    )
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.create_index('ix_outbox_status_next_attempt_at', ['status', 'next_attempt_at'], unique=False)


def downgrade():
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.drop_index('ix_outbox_status_next_attempt_at')
    op.drop_table('outbox')
