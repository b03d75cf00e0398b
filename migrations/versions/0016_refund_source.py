"""refund_source: a refund job's sends are recorded as "refund", not "charge"

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01 23:10:00

"""
from alembic import op

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None

OLD = ('checkout', 'charge', 'reconcile', 'webhook', 'admin')
NEW = (*OLD, 'refund')
# (table, constraint) of every column of TransitionSource
CHECKS = (
    ('payment_transitions', 'ck_payment_transitions_transition_source'),
    ('refund_transitions', 'ck_refund_transitions_refund_transition_source'),
    ('payment_transitions_archive', 'ck_payment_transitions_archive_archived_source'),
)


def _allow(values):
    listed = ", ".join(f"'{v}'" for v in values)
    for table, name in CHECKS:
        op.execute(f'ALTER TABLE {table} DROP CONSTRAINT {name}')
        op.execute(f'ALTER TABLE {table} ADD CONSTRAINT {name} CHECK (source IN ({listed}))')


def upgrade():
    _allow(NEW)


def downgrade():
    # A refund's sends recorded before this revision were "charge": so are they again.
    op.execute("UPDATE refund_transitions SET source = 'charge' WHERE source = 'refund'")
    _allow(OLD)
