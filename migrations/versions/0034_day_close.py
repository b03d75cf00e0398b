"""day_close: a reconciled day is closed (its result and items then never change) and
reopened only with a reason; both are rows of book_day_audit (append-only), which alone
set a day's closed_at (a trigger run as the owner: the app's role may not write the
column itself)

Revision ID: 0034
Revises: 0033
Create Date: 2026-12-08 01:10:00

"""
from alembic import op
import sqlalchemy as sa

revision = '0034'
down_revision = '0033'
branch_labels = None
depends_on = None

FUNCTIONS = """
CREATE FUNCTION book_day_audited() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp AS $$
DECLARE
    day reconciliation_days%ROWTYPE;
BEGIN
    SELECT * INTO day FROM reconciliation_days WHERE id = NEW.day_id FOR UPDATE;
    IF NEW.action = 'closed' THEN
        IF day.closed_at IS NOT NULL THEN
            RAISE EXCEPTION 'day % is closed already', NEW.day_id USING ERRCODE = 'check_violation';
        END IF;
        IF day.status <> 'reconciled' THEN
            RAISE EXCEPTION 'day % does not reconcile: it cannot be closed', NEW.day_id
                USING ERRCODE = 'check_violation';
        END IF;
        PERFORM set_config('payments.book_day_audited', 'on', true);
        UPDATE reconciliation_days SET closed_at = NEW.at, closed_by = NEW.actor WHERE id = NEW.day_id;
    ELSE
        IF day.closed_at IS NULL THEN
            RAISE EXCEPTION 'day % is not closed', NEW.day_id USING ERRCODE = 'check_violation';
        END IF;
        PERFORM set_config('payments.book_day_audited', 'on', true);
        UPDATE reconciliation_days SET closed_at = NULL, closed_by = NULL WHERE id = NEW.day_id;
    END IF;
    PERFORM set_config('payments.book_day_audited', '', true);
    RETURN NULL;
END $$;

CREATE FUNCTION book_day_unchanged() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.closed_at IS NOT NULL THEN
            RAISE EXCEPTION 'day % of % is closed: it is never deleted', OLD.day, OLD.provider
                USING ERRCODE = 'restrict_violation';
        END IF;
        RETURN OLD;
    END IF;
    IF (OLD.closed_at IS DISTINCT FROM NEW.closed_at OR OLD.closed_by IS DISTINCT FROM NEW.closed_by)
        AND coalesce(current_setting('payments.book_day_audited', true), '') <> 'on' THEN
        RAISE EXCEPTION 'a day is closed or reopened only through book_day_audit'
            USING ERRCODE = 'restrict_violation';
    END IF;
    IF OLD.closed_at IS NOT NULL AND NEW.closed_at IS NOT NULL THEN
        RAISE EXCEPTION 'day % of % is closed: reopen it with a reason first', OLD.day, OLD.provider
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END $$;

CREATE FUNCTION book_day_items_unchanged() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    day_id integer := CASE WHEN TG_OP = 'DELETE' THEN OLD.day_id ELSE NEW.day_id END;
BEGIN
    IF EXISTS (SELECT 1 FROM reconciliation_days WHERE id = day_id AND closed_at IS NOT NULL) THEN
        RAISE EXCEPTION 'day % is closed: its items do not change', day_id
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END $$;
"""


def upgrade():
    op.add_column('reconciliation_days', sa.Column('closed_at', sa.DateTime(timezone=True),
                                                   nullable=True))
    op.add_column('reconciliation_days', sa.Column('closed_by', sa.String(length=120),
                                                   nullable=True))
    op.create_table(
        'book_day_audit',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('day_id', sa.Integer(), nullable=False),
        sa.Column('action', sa.Enum('closed', 'reopened', name='book_day_action',
                                    native_enum=False, create_constraint=True, length=16),
                  nullable=False),
        sa.Column('actor', sa.String(length=120), nullable=False),
        sa.Column('reason', sa.String(length=500), nullable=True),
        sa.Column('at', sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("action = 'closed' OR coalesce(length(trim(reason)), 0) >= 3",
                           name=op.f('ck_book_day_audit_reopen_reason')),
        sa.ForeignKeyConstraint(['day_id'], ['reconciliation_days.id'],
                                name=op.f('fk_book_day_audit_day_id_reconciliation_days')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_book_day_audit')),
    )
    op.create_index(op.f('ix_book_day_audit_day_id'), 'book_day_audit', ['day_id'])
    op.execute(FUNCTIONS)
    op.execute("CREATE TRIGGER book_day_audit_applied AFTER INSERT ON book_day_audit "
               "FOR EACH ROW EXECUTE FUNCTION book_day_audited()")
    op.execute("CREATE TRIGGER book_day_audit_append_only BEFORE UPDATE OR DELETE ON "
               "book_day_audit FOR EACH ROW EXECUTE FUNCTION evidence_append_only()")
    op.execute("CREATE TRIGGER book_day_audit_never_truncated BEFORE TRUNCATE ON "
               "book_day_audit FOR EACH STATEMENT EXECUTE FUNCTION books_never_truncated()")
    op.execute("CREATE TRIGGER reconciliation_days_closed BEFORE UPDATE OR DELETE ON "
               "reconciliation_days FOR EACH ROW EXECUTE FUNCTION book_day_unchanged()")
    op.execute("CREATE TRIGGER reconciliation_items_closed BEFORE INSERT OR UPDATE OR DELETE ON "
               "reconciliation_items FOR EACH ROW EXECUTE FUNCTION book_day_items_unchanged()")


def downgrade():
    op.execute('DROP TRIGGER reconciliation_items_closed ON reconciliation_items')
    op.execute('DROP TRIGGER reconciliation_days_closed ON reconciliation_days')
    op.drop_table('book_day_audit')
    op.execute('DROP FUNCTION book_day_items_unchanged()')
    op.execute('DROP FUNCTION book_day_unchanged()')
    op.execute('DROP FUNCTION book_day_audited()')
    op.drop_column('reconciliation_days', 'closed_by')
    op.drop_column('reconciliation_days', 'closed_at')
