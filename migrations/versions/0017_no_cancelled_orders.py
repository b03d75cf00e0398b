"""no_cancelled_orders: OrderStatus.CANCELLED was never set by any code path: dropped

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-01 23:30:00

"""
from alembic import op

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None

NAME = 'ck_orders_order_status'
NEW = ('open', 'paid', 'partially_refunded', 'refunded')
OLD = ('open', 'paid', 'cancelled', 'partially_refunded', 'refunded')


def _allow(values):
    listed = ", ".join(f"'{v}'" for v in values)
    op.execute(f'ALTER TABLE orders DROP CONSTRAINT {NAME}')
    op.execute(f'ALTER TABLE orders ADD CONSTRAINT {NAME} CHECK (status IN ({listed}))')


def upgrade():
    _allow(NEW)  # fails, and changes nothing, if a row says 'cancelled' after all


def downgrade():
    _allow(OLD)
