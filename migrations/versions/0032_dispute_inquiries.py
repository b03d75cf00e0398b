"""dispute_inquiries: a dispute says whether it is an inquiry (no money moves, even when
it closes lost); the disputes still in an inquiry's statuses are marked

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-06 09:20:00

"""
from alembic import op
import sqlalchemy as sa

revision = '0032'
down_revision = '0031'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('disputes', sa.Column('is_inquiry', sa.Boolean(), nullable=False,
                                        server_default=sa.false()))
    op.execute("UPDATE disputes SET is_inquiry = true WHERE status LIKE 'warning%'")


def downgrade():
    op.drop_column('disputes', 'is_inquiry')
