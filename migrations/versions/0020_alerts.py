"""alerts: conditions the on-call admins are emailed about, once each

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02 09:00:00

"""
from alembic import op
import sqlalchemy as sa

revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None

KINDS = ('breaker_open', 'breaker_forced', 'provider_key', 'unknown_payments', 'emails_failing')
OLD_EMAILS = (
    'welcome', 'receipt', 'wallet_receipt', 'payment_failed', 'refund', 'review_alert',
    'refund_alert', 'dispute_alert',
)
EMAIL_CHECK = 'ck_outbox_email_kind'


def _allow_emails(values):
    listed = ", ".join(f"'{v}'" for v in values)
    op.execute(f'ALTER TABLE outbox DROP CONSTRAINT {EMAIL_CHECK}')
    op.execute(f'ALTER TABLE outbox ADD CONSTRAINT {EMAIL_CHECK} CHECK (kind IN ({listed}))')


def upgrade():
    op.create_table('alerts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.Enum(*KINDS, name='alert_kind', native_enum=False, create_constraint=True, length=24), nullable=False),
    sa.Column('dedupe_key', sa.String(length=200), nullable=False),
    sa.Column('detail', sa.String(length=500), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_alerts')),
    sa.UniqueConstraint('dedupe_key', name=op.f('uq_alerts_dedupe_key'))
    )
    op.create_index(op.f('ix_alerts_created_at'), 'alerts', ['created_at'], unique=False)
    _allow_emails((*OLD_EMAILS, 'ops_alert'))


def downgrade():
    op.execute("DELETE FROM outbox WHERE kind = 'ops_alert'")
    _allow_emails(OLD_EMAILS)
    op.drop_table('alerts')
