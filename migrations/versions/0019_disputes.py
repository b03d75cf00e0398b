"""disputes: chargebacks and inquiries from the provider, their transitions; an order
can be disputed, a ledger entry can be a dispute's, and the admins get a dispute alert

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-02 08:00:00

"""

from alembic import op
import sqlalchemy as sa

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

DISPUTE = (
    "warning_needs_response",
    "warning_under_review",
    "warning_closed",
    "needs_response",
    "under_review",
    "won",
    "lost",
    "needs_review",
)
SOURCES = ("checkout", "charge", "refund", "reconcile", "webhook", "admin")
OLD_ORDER = ("open", "paid", "partially_refunded", "refunded")
OLD_LEDGER = ("topup", "debit", "order", "reversal", "refund")
OLD_KINDS = (
    "welcome",
    "receipt",
    "wallet_receipt",
    "payment_failed",
    "refund",
    "review_alert",
    "refund_alert",
)
# (table, column, constraint, old values, new values)
CHECKS = (
    ("orders", "status", "ck_orders_order_status", OLD_ORDER, (*OLD_ORDER, "disputed")),
    (
        "ledger_entries",
        "kind",
        "ck_ledger_entries_ledger_kind",
        OLD_LEDGER,
        (*OLD_LEDGER, "dispute"),
    ),
    ("outbox", "kind", "ck_outbox_email_kind", OLD_KINDS, (*OLD_KINDS, "dispute_alert")),
)


def _enum(values, name, length=24):
    return sa.Enum(*values, name=name, native_enum=False, create_constraint=True, length=length)


def _allow(table, column, name, values):
    listed = ", ".join(f"'{v}'" for v in values)
    op.execute(f"ALTER TABLE {table} DROP CONSTRAINT {name}")
    op.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} CHECK ({column} IN ({listed}))")


def upgrade():
    op.create_table(
        "disputes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("provider", sa.String(length=32), nullable=False),
        sa.Column("provider_dispute_id", sa.String(length=255), nullable=False),
        sa.Column("payment_id", sa.Integer(), nullable=False),
        sa.Column("amount_minor", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("status", _enum(DISPUTE, "dispute_status"), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=False),
        sa.Column("evidence_due_by", sa.DateTime(timezone=True), nullable=True),
        sa.Column("is_effect_applied", sa.Boolean(), nullable=False),
        sa.Column("withdrawn_minor", sa.BigInteger(), nullable=False),
        sa.Column("withdrawals", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["payment_id"], ["payments.id"], name=op.f("fk_disputes_payment_id_payments")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_disputes")),
        sa.UniqueConstraint(
            "provider", "provider_dispute_id", name=op.f("uq_disputes_provider_provider_dispute_id")
        ),
    )
    op.create_index("ix_disputes_status", "disputes", ["status"], unique=False)
    op.create_index(op.f("ix_disputes_payment_id"), "disputes", ["payment_id"], unique=False)
    op.create_table(
        "dispute_transitions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dispute_id", sa.Integer(), nullable=False),
        sa.Column("from_status", _enum(DISPUTE, "dispute_from_status"), nullable=True),
        sa.Column("to_status", _enum(DISPUTE, "dispute_to_status"), nullable=False),
        sa.Column("source", _enum(SOURCES, "dispute_transition_source", 16), nullable=False),
        sa.Column("reason", sa.String(length=500), nullable=False),
        sa.Column("actor", sa.String(length=254), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["dispute_id"], ["disputes.id"], name=op.f("fk_dispute_transitions_dispute_id_disputes")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dispute_transitions")),
    )
    op.create_index(
        op.f("ix_dispute_transitions_dispute_id"),
        "dispute_transitions",
        ["dispute_id"],
        unique=False,
    )
    for table, column, name, _old, new in CHECKS:
        _allow(table, column, name, new)


def downgrade():
    op.execute("DELETE FROM outbox WHERE kind = 'dispute_alert'")
    op.execute("UPDATE orders SET status = 'paid' WHERE status = 'disputed'")
    for table, column, name, old, _new in CHECKS:
        _allow(table, column, name, old)  # fails, changing nothing, if a dispute entry remains
    op.drop_table("dispute_transitions")
    op.drop_table("disputes")
