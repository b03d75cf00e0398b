"""call_log_subjects: a provider call names the row it is about by kind and id
(provider_calls.subject_kind, subject_id), not as a "payment id" that held refund calls'
payments; the refund calls logged so far are filed under their refund (found by key)

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-06 02:30:00

"""
from alembic import op
import sqlalchemy as sa

revision = '0027'
down_revision = '0026'
branch_labels = None
depends_on = None

CHARGE_CALLS = ('charge', 'replay', 'lookup', 'resend', 'card_check', 'cancel')
RENAMED = {'replay': 'charge_replay', 'lookup': 'charge_lookup', 'resend': 'charge_resend'}


def upgrade():
    op.alter_column('provider_calls', 'payment_id', new_column_name='subject_id')
    op.add_column('provider_calls', sa.Column('subject_kind', sa.String(16), nullable=True))
    op.execute('ALTER INDEX ix_provider_calls_payment_id_started_at '
               'RENAME TO ix_provider_calls_subject_id_started_at')
    charge_calls = ", ".join(f"'{name}'" for name in CHARGE_CALLS)
    op.execute(f"UPDATE provider_calls SET subject_kind = 'charge' "
               f"WHERE operation IN ({charge_calls}) AND subject_id IS NOT NULL")
    op.execute("UPDATE provider_calls c SET subject_kind = 'refund', subject_id = r.id "
               "FROM refunds r WHERE c.operation LIKE 'refund%' "
               "AND c.idempotency_key = CAST(r.idempotency_key AS varchar)")
    for old, new in RENAMED.items():
        op.execute(f"UPDATE provider_calls SET operation = '{new}' WHERE operation = '{old}'")


def downgrade():
    for old, new in RENAMED.items():
        op.execute(f"UPDATE provider_calls SET operation = '{old}' WHERE operation = '{new}'")
    op.execute("UPDATE provider_calls c SET subject_id = r.payment_id "
               "FROM refunds r WHERE c.subject_kind = 'refund' AND r.id = c.subject_id")
    op.execute('ALTER INDEX ix_provider_calls_subject_id_started_at '
               'RENAME TO ix_provider_calls_payment_id_started_at')
    op.drop_column('provider_calls', 'subject_kind')
    op.alter_column('provider_calls', 'subject_id', new_column_name='payment_id')
