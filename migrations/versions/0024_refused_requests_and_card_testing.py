"""refused_requests_and_card_testing: a customer told when a refund fails after it
succeeded (email kind refund_failed); ops alerted at once when a provider refuses our
request as invalid, and when the card-testing limits trip; a payment keeps the address
it was asked from, and a customer (payments_blocked_until) or an address (payment_blocks)
whose declines passed the limit is refused new payments until then

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-04 19:45:00

"""
from alembic import op
import sqlalchemy as sa

revision = '0024'
down_revision = '0023'
branch_labels = None
depends_on = None

OLD_EMAILS = (
    'welcome', 'receipt', 'wallet_receipt', 'payment_failed', 'refund', 'review_alert',
    'refund_alert', 'dispute_alert', 'ops_alert',
)
OLD_ALERTS = ('breaker_open', 'breaker_forced', 'provider_key', 'unknown_payments', 'emails_failing')


def _allow(table, column, name, values):
    listed = ", ".join(f"'{v}'" for v in values)
    op.execute(f'ALTER TABLE {table} DROP CONSTRAINT {name}')
    op.execute(f'ALTER TABLE {table} ADD CONSTRAINT {name} CHECK ({column} IN ({listed}))')


def upgrade():
    _allow('outbox', 'kind', 'ck_outbox_email_kind', (*OLD_EMAILS, 'refund_failed'))
    _allow('alerts', 'kind', 'ck_alerts_alert_kind', (*OLD_ALERTS, 'invalid_request', 'card_testing'))
    op.add_column('payments', sa.Column('client_address', sa.String(length=45), nullable=True))
    op.add_column(
        'customers',
        sa.Column('payments_blocked_until', sa.DateTime(timezone=True), nullable=True),
    )
    op.add_column(
        'customers', sa.Column('last_declined_at', sa.DateTime(timezone=True), nullable=True)
    )
    op.create_table(
        'payment_blocks',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('scope', sa.String(length=16), nullable=False),
        sa.Column('key', sa.String(length=64), nullable=False),
        sa.Column('until', sa.DateTime(timezone=True), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_payment_blocks')),
        sa.UniqueConstraint('scope', 'key', name=op.f('uq_payment_blocks_scope_key')),
    )


def downgrade():
    op.drop_table('payment_blocks')
    op.drop_column('customers', 'last_declined_at')
    op.drop_column('customers', 'payments_blocked_until')
    op.drop_column('payments', 'client_address')
    op.execute("DELETE FROM alerts WHERE kind IN ('invalid_request', 'card_testing')")
    _allow('alerts', 'kind', 'ck_alerts_alert_kind', OLD_ALERTS)
    op.execute("DELETE FROM outbox WHERE kind = 'refund_failed'")
    _allow('outbox', 'kind', 'ck_outbox_email_kind', OLD_EMAILS)
