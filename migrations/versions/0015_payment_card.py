"""payment_card: the card's brand and last four digits, as the provider answered (receipts)

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01 20:50:00

"""
import sqlalchemy as sa
from alembic import op

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('payments', sa.Column('card_brand', sa.String(length=20), nullable=True))
    op.add_column('payments', sa.Column('card_last4', sa.String(length=4), nullable=True))


def downgrade():
    op.drop_column('payments', 'card_last4')
    op.drop_column('payments', 'card_brand')
