"""provider_payouts: each payout as the provider's events tell it (status forward only),
UNIQUE by (provider, payout id)

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-06 09:10:00

"""
from alembic import op
import sqlalchemy as sa

revision = '0031'
down_revision = '0030'
branch_labels = None
depends_on = None

STATUSES = ('pending', 'in_transit', 'paid', 'failed', 'canceled')


def upgrade():
    op.create_table(
        'provider_payouts',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('provider', sa.String(length=32), nullable=False),
        sa.Column('payout_id', sa.String(length=100), nullable=False),
        sa.Column('amount_minor', sa.BigInteger(), nullable=False),
        sa.Column('currency', sa.String(length=3), nullable=False),
        sa.Column('status', sa.Enum(*STATUSES, name='payout_status', native_enum=False,
                                    create_constraint=True, length=16), nullable=False),
        sa.Column('arrival_date', sa.Date(), nullable=True),
        sa.Column('failure_code', sa.String(length=64), nullable=True),
        sa.Column('event_created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_provider_payouts')),
        sa.UniqueConstraint('provider', 'payout_id',
                            name=op.f('uq_provider_payouts_provider_payout_id')),
    )


def downgrade():
    op.drop_table('provider_payouts')
