"""admin_roles: every dashboard user has a role (viewer, operator, refunder, admin); the
ones that exist keep everything they could do (admin)

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-02 09:20:00

"""
from alembic import op
import sqlalchemy as sa

revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None

ROLES = ('viewer', 'operator', 'refunder', 'admin')


def upgrade():
    op.add_column('admin_users', sa.Column(
        'role',
        sa.Enum(*ROLES, name='admin_role', native_enum=False, create_constraint=True, length=16),
        server_default='admin',
        nullable=False,
    ))


def downgrade():
    op.drop_column('admin_users', 'role')  # its CHECK goes with it
