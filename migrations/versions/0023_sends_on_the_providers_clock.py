"""sends_on_the_providers_clock: a payment keeps the provider's clock less ours, read
at its latest answered send (its lookups' lists are shifted onto the provider's
clock); a refund keeps its latest send's time (a lookup's replay is a send, and
absence waits a settle window after it)

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-04 19:30:00

"""
from alembic import op
import sqlalchemy as sa

revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('payments', sa.Column('provider_clock_offset_s', sa.Float(), nullable=True))
    op.add_column('refunds', sa.Column('last_sent_at', sa.DateTime(timezone=True), nullable=True))
    # A refund sent before this kept only its first send: its latest is not older.
    op.execute('UPDATE refunds SET last_sent_at = first_sent_at')


def downgrade():
    op.drop_column('refunds', 'last_sent_at')
    op.drop_column('payments', 'provider_clock_offset_s')
