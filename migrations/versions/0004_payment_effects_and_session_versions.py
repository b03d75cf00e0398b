"""payment effects tracked (for reversals); session versions (for logout everywhere)

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 02:20:00

"""
from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('payments', schema=None) as batch_op:
        # payments.is_effect_applied: the success's effect (order paid, wallet credited)
        # is in place; effect_reversals: how many times a decision took it back.
        batch_op.add_column(sa.Column('is_effect_applied', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.add_column(sa.Column('effect_reversals', sa.Integer(), nullable=False, server_default='0'))
    with op.batch_alter_table('customers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('session_version', sa.Integer(), nullable=False, server_default='0'))
    with op.batch_alter_table('admin_users', schema=None) as batch_op:
        batch_op.add_column(sa.Column('session_version', sa.Integer(), nullable=False, server_default='0'))

    # Existing effects: a top-up's credit is its ledger entry; an order payment paid its
    # order when it succeeded while the order was open (the order is paid and this is
    # the first payment of it that ever succeeded).
    # Wallet payments of orders get their own ledger kind (the audit counts them).
    op.execute(
        "UPDATE ledger_entries SET kind = 'order' WHERE kind = 'debit' AND reference LIKE 'order %' "
        "AND EXISTS (SELECT 1 FROM orders o WHERE 'order ' || o.id = ledger_entries.reference "
        "AND o.status = 'paid')"
    )
    op.execute(
        "UPDATE payments SET is_effect_applied = TRUE WHERE purpose = 'wallet_topup' AND EXISTS "
        "(SELECT 1 FROM ledger_entries l WHERE l.operation_id = 'topup:' || payments.id)"
    )
    op.execute(
        "UPDATE payments SET is_effect_applied = TRUE WHERE purpose = 'order' "
        "AND status IN ('succeeded', 'needs_review') "
        "AND EXISTS (SELECT 1 FROM orders o WHERE o.id = payments.order_id AND o.status = 'paid') "
        "AND payments.id = (SELECT MIN(t.payment_id) FROM payment_transitions t "
        "JOIN payments p2 ON p2.id = t.payment_id "
        "WHERE p2.order_id = payments.order_id AND t.to_status = 'succeeded')"
    )


def downgrade():
    with op.batch_alter_table('admin_users', schema=None) as batch_op:
        batch_op.drop_column('session_version')
    with op.batch_alter_table('customers', schema=None) as batch_op:
        batch_op.drop_column('session_version')
    with op.batch_alter_table('payments', schema=None) as batch_op:
        batch_op.drop_column('effect_reversals')
        batch_op.drop_column('is_effect_applied')
