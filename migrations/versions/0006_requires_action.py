"""payments that require action (3-D Secure): the status, the card's payment method and
the customer's authentication URL; the one-active-payment-per-order index counts them

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 05:00:00

"""
from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

OLD = ('pending', 'unknown', 'succeeded', 'failed', 'needs_review')
NEW = ('pending', 'unknown', 'requires_action', 'succeeded', 'failed', 'needs_review')
OLD_ACTIVE = "status IN ('pending', 'unknown', 'succeeded', 'needs_review')"
NEW_ACTIVE = "status IN ('pending', 'unknown', 'requires_action', 'succeeded', 'needs_review')"
COLUMNS = (
    ('payments', 'status', 'payment_status', False),
    ('payment_transitions', 'from_status', 'transition_from_status', True),
    ('payment_transitions', 'to_status', 'transition_to_status', False),
)


def _enum(values, name):
    return sa.Enum(*values, name=name, native_enum=False, create_constraint=True, length=16)


def _retype(values_from, values_to):
    for table, column, name, nullable in COLUMNS:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.alter_column(
                column,
                existing_type=_enum(values_from, name),
                type_=_enum(values_to, name),
                existing_nullable=nullable,
            )


def _active_index(where):
    with op.batch_alter_table('payments', schema=None) as batch_op:
        batch_op.create_index('uq_payments_active_order', ['order_id'], unique=True, postgresql_where=sa.text(where), sqlite_where=sa.text(where))


def upgrade():
    with op.batch_alter_table('payments', schema=None) as batch_op:
        batch_op.drop_index('uq_payments_active_order')
        batch_op.add_column(sa.Column('payment_method', sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column('action_url', sa.String(length=2048), nullable=True))
    _retype(OLD, NEW)
    _active_index(NEW_ACTIVE)


def downgrade():
    # The old code cannot tell a payment awaiting authentication from one it lost track
    # of: both become unknown, which the old reconciliation asks the provider about.
    op.execute("UPDATE payments SET status = 'unknown' WHERE status = 'requires_action'")
    for column in ('from_status', 'to_status'):
        op.execute(f"UPDATE payment_transitions SET {column} = 'unknown' WHERE {column} = 'requires_action'")
    with op.batch_alter_table('payments', schema=None) as batch_op:
        batch_op.drop_index('uq_payments_active_order')
        batch_op.drop_column('action_url')
        batch_op.drop_column('payment_method')
    _retype(NEW, OLD)
    _active_index(OLD_ACTIVE)
