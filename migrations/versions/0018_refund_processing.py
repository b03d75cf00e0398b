"""refund_processing: a refund the provider has but has not finished ("processing"), and
the admins' alert about a refund ("refund_alert")

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-01 23:45:00

"""
from alembic import op

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None

OLD_REFUND = ('pending', 'unknown', 'succeeded', 'failed', 'needs_review')
NEW_REFUND = ('pending', 'unknown', 'processing', 'succeeded', 'failed', 'needs_review')
OLD_KINDS = ('welcome', 'receipt', 'wallet_receipt', 'payment_failed', 'refund', 'review_alert')
NEW_KINDS = (*OLD_KINDS, 'refund_alert')
# (table, column, constraint)
REFUND_CHECKS = (
    ('refunds', 'status', 'ck_refunds_refund_status'),
    ('refund_transitions', 'from_status', 'ck_refund_transitions_refund_from_status'),
    ('refund_transitions', 'to_status', 'ck_refund_transitions_refund_to_status'),
)
KIND_CHECK = ('outbox', 'kind', 'ck_outbox_email_kind')


def _allow(checks, values):
    listed = ", ".join(f"'{v}'" for v in values)
    for table, column, name in checks:
        op.execute(f'ALTER TABLE {table} DROP CONSTRAINT {name}')
        op.execute(f'ALTER TABLE {table} ADD CONSTRAINT {name} CHECK ({column} IN ({listed}))')


def upgrade():
    _allow(REFUND_CHECKS, NEW_REFUND)
    _allow((KIND_CHECK,), NEW_KINDS)


def downgrade():
    op.execute("UPDATE refunds SET status = 'unknown' WHERE status = 'processing'")
    op.execute("DELETE FROM refund_transitions WHERE 'processing' IN (from_status, to_status)")
    op.execute("DELETE FROM outbox WHERE kind = 'refund_alert'")
    _allow(REFUND_CHECKS, OLD_REFUND)
    _allow((KIND_CHECK,), OLD_KINDS)
