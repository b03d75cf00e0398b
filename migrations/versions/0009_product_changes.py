"""the catalog's audit trail (admins create, edit and retire products)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 06:25:00

"""
from alembic import op
import sqlalchemy as sa


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('product_changes',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('product_id', sa.Integer(), nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('actor', sa.String(length=254), nullable=False),
    sa.Column('changes', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['product_id'], ['products.id'], name=op.f('fk_product_changes_product_id_products')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_product_changes'))
    )
    with op.batch_alter_table('product_changes', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_product_changes_product_id'), ['product_id'], unique=False)


def downgrade():
    with op.batch_alter_table('product_changes', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_product_changes_product_id'))
    op.drop_table('product_changes')
