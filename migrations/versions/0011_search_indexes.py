"""indexes for the dashboard's search: the provider's payment and refund ids, webhook
event ids (each UNIQUE leads with the provider, which the search does not know)

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01 06:50:00

"""
from alembic import op


revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

INDEXES = (
    ('payments', 'ix_payments_provider_payment_id', 'provider_payment_id'),
    ('processed_webhooks', 'ix_processed_webhooks_event_id', 'event_id'),
    ('refunds', 'ix_refunds_provider_refund_id', 'provider_refund_id'),
)


def upgrade():
    for table, name, column in INDEXES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.create_index(name, [column], unique=False)


def downgrade():
    for table, name, _column in INDEXES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_index(name)
