"""customer_locale: the language a customer's emails are written in

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01 20:30:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade():
    # The last language the customer chose or browsed in (en, it): emails follow it.
    op.add_column(
        'customers',
        sa.Column('locale', sa.String(length=8), server_default='en', nullable=False),
    )


def downgrade():
    op.drop_column('customers', 'locale')
