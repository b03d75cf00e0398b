"""provider_customers: a shop customer as a provider knows them (a Stripe Customer); a
payment keeps the one it was first sent with, so its lookup lists only that customer's
intents

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-04 20:00:00

"""
from alembic import op
import sqlalchemy as sa

revision = '0025'
down_revision = '0024'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'provider_customers',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('customer_id', sa.Integer(), nullable=False),
        sa.Column('provider', sa.String(length=32), nullable=False),
        sa.Column('provider_customer_id', sa.String(length=255), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ['customer_id'], ['customers.id'],
            name=op.f('fk_provider_customers_customer_id_customers'),
        ),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_provider_customers')),
        sa.UniqueConstraint(
            'customer_id', 'provider', name=op.f('uq_provider_customers_customer_id_provider')
        ),
    )
    op.add_column(
        'payments', sa.Column('provider_customer_id', sa.String(length=255), nullable=True)
    )


def downgrade():
    op.drop_column('payments', 'provider_customer_id')
    op.drop_table('provider_customers')
