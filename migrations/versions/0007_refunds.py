"""refunds and their transitions; orders can be refunded in part or in full

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 05:30:00

"""
from alembic import op
import sqlalchemy as sa


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

REFUND = ('pending', 'unknown', 'succeeded', 'failed', 'needs_review')
SOURCES = ('checkout', 'charge', 'reconcile', 'webhook', 'admin')
OLD_ORDER = ('open', 'paid', 'cancelled')
NEW_ORDER = ('open', 'paid', 'cancelled', 'partially_refunded', 'refunded')


def _enum(values, name, length=16):
    return sa.Enum(*values, name=name, native_enum=False, create_constraint=True, length=length)


def upgrade():
    op.create_table('refunds',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('idempotency_key', sa.Uuid(), nullable=False),
    sa.Column('payment_id', sa.Integer(), nullable=True),
    sa.Column('order_id', sa.Integer(), nullable=True),
    sa.Column('provider', sa.String(length=32), nullable=False),
    sa.Column('amount_minor', sa.BigInteger(), nullable=False),
    sa.Column('currency', sa.String(length=3), nullable=False),
    sa.Column('reason', sa.String(length=500), nullable=False),
    sa.Column('actor', sa.String(length=254), nullable=False),
    sa.Column('status', _enum(REFUND, 'refund_status'), nullable=False),
    sa.Column('provider_refund_id', sa.String(length=255), nullable=True),
    sa.Column('failure_code', sa.String(length=64), nullable=True),
    sa.Column('first_sent_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('send_count', sa.Integer(), nullable=False),
    sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('next_reconcile_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('reconcile_attempts', sa.Integer(), nullable=False),
    sa.Column('last_error', sa.String(length=500), nullable=True),
    sa.Column('is_effect_applied', sa.Boolean(), server_default=sa.false(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint('amount_minor > 0', name=op.f('ck_refunds_amount_positive')),
    sa.CheckConstraint('payment_id IS NOT NULL OR order_id IS NOT NULL', name=op.f('ck_refunds_refunds_something')),
    sa.ForeignKeyConstraint(['order_id'], ['orders.id'], name=op.f('fk_refunds_order_id_orders')),
    sa.ForeignKeyConstraint(['payment_id'], ['payments.id'], name=op.f('fk_refunds_payment_id_payments')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_refunds')),
    sa.UniqueConstraint('idempotency_key', name=op.f('uq_refunds_idempotency_key')),
    sa.UniqueConstraint('provider', 'provider_refund_id', name=op.f('uq_refunds_provider_provider_refund_id'))
    )
    with op.batch_alter_table('refunds', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_refunds_order_id'), ['order_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_refunds_payment_id'), ['payment_id'], unique=False)
        batch_op.create_index('ix_refunds_status_next_reconcile_at', ['status', 'next_reconcile_at'], unique=False)

    op.create_table('refund_transitions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('refund_id', sa.Integer(), nullable=False),
    sa.Column('from_status', _enum(REFUND, 'refund_from_status'), nullable=True),
    sa.Column('to_status', _enum(REFUND, 'refund_to_status'), nullable=False),
    sa.Column('source', _enum(SOURCES, 'refund_transition_source'), nullable=False),
    sa.Column('reason', sa.String(length=500), nullable=False),
    sa.Column('actor', sa.String(length=254), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['refund_id'], ['refunds.id'], name=op.f('fk_refund_transitions_refund_id_refunds')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_refund_transitions'))
    )
    with op.batch_alter_table('refund_transitions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_refund_transitions_refund_id'), ['refund_id'], unique=False)

    with op.batch_alter_table('orders', schema=None) as batch_op:
        batch_op.alter_column(
            'status',
            existing_type=_enum(OLD_ORDER, 'order_status'),
            type_=_enum(NEW_ORDER, 'order_status', 24),
            existing_nullable=False,
        )


def downgrade():
    op.execute("UPDATE orders SET status = 'paid' WHERE status IN ('partially_refunded', 'refunded')")
    with op.batch_alter_table('orders', schema=None) as batch_op:
        batch_op.alter_column(
            'status',
            existing_type=_enum(NEW_ORDER, 'order_status', 24),
            type_=_enum(OLD_ORDER, 'order_status'),
            existing_nullable=False,
        )
    with op.batch_alter_table('refund_transitions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_refund_transitions_refund_id'))
    op.drop_table('refund_transitions')
    with op.batch_alter_table('refunds', schema=None) as batch_op:
        batch_op.drop_index('ix_refunds_status_next_reconcile_at')
        batch_op.drop_index(batch_op.f('ix_refunds_payment_id'))
        batch_op.drop_index(batch_op.f('ix_refunds_order_id'))
    op.drop_table('refunds')
