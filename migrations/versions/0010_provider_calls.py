"""the provider call log

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 06:40:00

"""
from alembic import op
import sqlalchemy as sa


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('provider_calls',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('provider', sa.String(length=32), nullable=False),
    sa.Column('operation', sa.String(length=32), nullable=False),
    sa.Column('payment_id', sa.Integer(), nullable=True),
    sa.Column('idempotency_key', sa.String(length=100), nullable=True),
    sa.Column('attempt', sa.Integer(), nullable=True),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('duration_ms', sa.Float(), nullable=False),
    sa.Column('outcome', sa.String(length=32), nullable=False),
    sa.Column('http_status', sa.Integer(), nullable=True),
    sa.Column('endpoint', sa.String(length=200), nullable=True),
    sa.Column('request_id', sa.String(length=100), nullable=True),
    sa.Column('error', sa.String(length=500), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_provider_calls'))
    )
    with op.batch_alter_table('provider_calls', schema=None) as batch_op:
        batch_op.create_index('ix_provider_calls_payment_id_started_at', ['payment_id', 'started_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_provider_calls_started_at'), ['started_at'], unique=False)


def downgrade():
    with op.batch_alter_table('provider_calls', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_provider_calls_started_at'))
        batch_op.drop_index('ix_provider_calls_payment_id_started_at')
    op.drop_table('provider_calls')
