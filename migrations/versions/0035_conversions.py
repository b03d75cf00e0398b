"""conversions: a provider's transaction settled in another currency than ours keeps the
provider's exchange rate, and the books convert it through fx:<provider> (the chart's
currency-conversion account)

Revision ID: 0035
Revises: 0034
Create Date: 2026-12-08 01:30:00

"""
from alembic import op
import sqlalchemy as sa

revision = '0035'
down_revision = '0034'
branch_labels = None
depends_on = None

NAME = '[a-z][a-z0-9_]*'
OLD_ACCOUNT = (
    '^(revenue|refunds|disputes|adjustments|wallet:[1-9][0-9]*'
    f'|clearing:{NAME}|fees:{NAME}|bank:{NAME})$'
)
NEW_ACCOUNT = (
    '^(revenue|refunds|disputes|adjustments|wallet:[1-9][0-9]*'
    f'|clearing:{NAME}|fees:{NAME}|bank:{NAME}|fx:{NAME})$'
)


def _account_pattern(pattern):
    op.execute('ALTER TABLE postings DROP CONSTRAINT ck_postings_account_address')
    op.execute(f"ALTER TABLE postings ADD CONSTRAINT ck_postings_account_address "
               f"CHECK (account ~ '{pattern}')")


def upgrade():
    op.add_column('provider_balance_transactions',
                  sa.Column('exchange_rate', sa.Numeric(24, 12), nullable=True))
    _account_pattern(NEW_ACCOUNT)


def downgrade():
    _account_pattern(OLD_ACCOUNT)
    op.drop_column('provider_balance_transactions', 'exchange_rate')
