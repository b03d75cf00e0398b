"""refund_requests_and_console_time: a customer asks for a refund of their order
(refund_requests; one waiting per order) and is emailed when it is declined (email kind
refund_declined); each dashboard user reads times in their own zone; the search finds
payments by the card's last four digits and by amount

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-05 23:00:00

"""
from alembic import op
import sqlalchemy as sa

revision = '0026'
down_revision = '0025'
branch_labels = None
depends_on = None

OLD_EMAILS = (
    'welcome', 'receipt', 'wallet_receipt', 'payment_failed', 'refund', 'review_alert',
    'refund_alert', 'dispute_alert', 'ops_alert', 'refund_failed',
)


def _allow(table, column, name, values):
    listed = ", ".join(f"'{v}'" for v in values)
    op.execute(f'ALTER TABLE {table} DROP CONSTRAINT {name}')
    op.execute(f'ALTER TABLE {table} ADD CONSTRAINT {name} CHECK ({column} IN ({listed}))')


def upgrade():
    _allow('outbox', 'kind', 'ck_outbox_email_kind', (*OLD_EMAILS, 'refund_declined'))
    op.add_column(
        'admin_users',
        sa.Column('time_zone', sa.String(length=64), server_default='UTC', nullable=False),
    )
    op.create_index('ix_payments_card_last4_id', 'payments', ['card_last4', 'id'])
    op.create_index('ix_payments_amount_minor_id', 'payments', ['amount_minor', 'id'])
    op.create_table(
        'refund_requests',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('order_id', sa.Integer(), nullable=False),
        sa.Column('customer_id', sa.Integer(), nullable=False),
        sa.Column('reason', sa.String(length=500), nullable=False),
        sa.Column(
            'status',
            sa.Enum(
                'waiting', 'approved', 'declined',
                name='refund_request_status', native_enum=False, create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column('refund_id', sa.Integer(), nullable=True),
        sa.Column('decided_by', sa.String(length=254), nullable=True),
        sa.Column('decision_message', sa.String(length=500), nullable=True),
        sa.Column('decided_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "(status = 'approved') = (refund_id IS NOT NULL)",
            name=op.f('ck_refund_requests_approved_has_refund'),
        ),
        sa.ForeignKeyConstraint(
            ['customer_id'], ['customers.id'],
            name=op.f('fk_refund_requests_customer_id_customers'),
        ),
        sa.ForeignKeyConstraint(
            ['order_id'], ['orders.id'], name=op.f('fk_refund_requests_order_id_orders')
        ),
        sa.ForeignKeyConstraint(
            ['refund_id'], ['refunds.id'], name=op.f('fk_refund_requests_refund_id_refunds')
        ),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_refund_requests')),
    )
    op.create_index('ix_refund_requests_order_id', 'refund_requests', ['order_id'])
    op.create_index('ix_refund_requests_customer_id', 'refund_requests', ['customer_id'])
    op.create_index(
        'ix_refund_requests_status_created_at', 'refund_requests', ['status', 'created_at']
    )
    op.create_index(
        'uq_refund_requests_waiting_order', 'refund_requests', ['order_id'], unique=True,
        postgresql_where=sa.text("status = 'waiting'"),
    )


def downgrade():
    op.drop_table('refund_requests')
    op.drop_index('ix_payments_amount_minor_id', table_name='payments')
    op.drop_index('ix_payments_card_last4_id', table_name='payments')
    op.drop_column('admin_users', 'time_zone')
    op.execute("DELETE FROM outbox WHERE kind = 'refund_declined'")
    _allow('outbox', 'kind', 'ck_outbox_email_kind', OLD_EMAILS)
