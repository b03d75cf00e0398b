"""wallets in the journal: a wallet's posting names its ledger entry (UNIQUE), every
ledger entry has exactly one posting on its wallet's account with the opposite amount
(a deferred constraint trigger), so a wallet's balance is its account's balance; the
balances from before the books are carried in as entries against `adjustments`

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-06 09:00:00

"""
from alembic import op
import sqlalchemy as sa

revision = '0030'
down_revision = '0029'
branch_labels = None
depends_on = None

OLD_KINDS = ('payment', 'refund', 'dispute', 'order', 'balance')
NEW_KINDS = OLD_KINDS + ('ledger',)
NAME = '[a-z][a-z0-9_]*'
OLD_ACCOUNT = (
    f'^(revenue|refunds|disputes|wallet:[1-9][0-9]*|clearing:{NAME}|fees:{NAME}|bank:{NAME})$'
)
NEW_ACCOUNT = OLD_ACCOUNT.replace('disputes|', 'disputes|adjustments|')

POSTED = """
CREATE FUNCTION ledger_entry_posted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM postings p JOIN wallets w ON w.id = NEW.wallet_id
        WHERE p.ledger_entry_id = NEW.id AND p.account = 'wallet:' || NEW.wallet_id
            AND p.amount_minor = -NEW.amount_minor AND p.currency = w.currency
    ) THEN
        RAISE EXCEPTION 'ledger entry % (wallet %, %) has no posting on its account',
            NEW.id, NEW.wallet_id, NEW.amount_minor
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$;
"""

# The wallet postings written before this revision (a top-up's success, a reversal, a
# dispute's withdrawal and reinstatement), each paired with its ledger entry: the same
# wallet, source and mirrored amount, in the order both were written.
LINK_EXISTING = """
WITH postings_ranked AS (
    SELECT p.id, substr(p.account, 8)::bigint AS wallet_id, e.source_kind, e.source_id,
        -p.amount_minor AS amount_minor,
        row_number() OVER (PARTITION BY p.account, e.source_kind, e.source_id, p.amount_minor
            ORDER BY p.id) AS n
    FROM postings p JOIN journal_entries e ON e.id = p.entry_id
    WHERE p.account LIKE 'wallet:%'
), ledger_ranked AS (
    SELECT l.id, l.wallet_id, l.source_kind, l.source_id, l.amount_minor,
        row_number() OVER (PARTITION BY l.wallet_id, l.source_kind, l.source_id, l.amount_minor
            ORDER BY l.id) AS n
    FROM ledger_entries l WHERE l.source_kind IS NOT NULL
)
UPDATE postings SET ledger_entry_id = l.id
FROM postings_ranked p JOIN ledger_ranked l USING (wallet_id, source_kind, source_id,
    amount_minor, n)
WHERE postings.id = p.id
"""
# Every other ledger entry (a movement from before the journal): carried in, one entry
# each, against `adjustments`.
CARRY_IN = """
WITH unposted AS (
    SELECT l.id, l.wallet_id, l.amount_minor, l.created_at, w.currency
    FROM ledger_entries l JOIN wallets w ON w.id = l.wallet_id
    WHERE NOT EXISTS (SELECT 1 FROM postings p WHERE p.ledger_entry_id = l.id)
), entries AS (
    INSERT INTO journal_entries (source_kind, source_id, step, created_at)
    SELECT 'ledger', id, 'carried_in', created_at FROM unposted ORDER BY id
    RETURNING id, source_id
)
INSERT INTO postings (entry_id, account, amount_minor, currency, ledger_entry_id)
SELECT entries.id, leg.account, leg.amount_minor, u.currency, leg.ledger_entry_id
FROM entries JOIN unposted u ON u.id = entries.source_id CROSS JOIN LATERAL (VALUES
    (1, 'wallet:' || u.wallet_id, -u.amount_minor, u.id),
    (2, 'adjustments', u.amount_minor, NULL::bigint))
    AS leg(n, account, amount_minor, ledger_entry_id)
ORDER BY u.id, leg.n
"""
LINKED = "(account LIKE 'wallet:%') = (ledger_entry_id IS NOT NULL)"


def _allow(table, column, name, values):
    listed = ", ".join(f"'{v}'" for v in values)
    op.execute(f'ALTER TABLE {table} DROP CONSTRAINT {name}')
    op.execute(f'ALTER TABLE {table} ADD CONSTRAINT {name} CHECK ({column} IN ({listed}))')


def _account_pattern(pattern):
    op.execute('ALTER TABLE postings DROP CONSTRAINT ck_postings_account_address')
    op.execute(f"ALTER TABLE postings ADD CONSTRAINT ck_postings_account_address "
               f"CHECK (account ~ '{pattern}')")


def upgrade():
    _allow('journal_entries', 'source_kind', 'ck_journal_entries_journal_source_kind', NEW_KINDS)
    _allow('ledger_entries', 'source_kind', 'ck_ledger_entries_ledger_source_kind', NEW_KINDS)
    _account_pattern(NEW_ACCOUNT)
    op.add_column('postings', sa.Column('ledger_entry_id', sa.Integer(), nullable=True))
    op.execute('ALTER TABLE postings DISABLE TRIGGER postings_append_only')
    op.execute(LINK_EXISTING)
    op.execute('ALTER TABLE postings ENABLE TRIGGER postings_append_only')
    op.execute(CARRY_IN)
    op.execute('SET CONSTRAINTS ALL IMMEDIATE')  # the entries' balance checked now, not later
    op.create_foreign_key(op.f('fk_postings_ledger_entry_id_ledger_entries'), 'postings',
                          'ledger_entries', ['ledger_entry_id'], ['id'])
    op.create_unique_constraint(op.f('uq_postings_ledger_entry_id'), 'postings',
                                ['ledger_entry_id'])
    op.create_check_constraint(op.f('ck_postings_wallet_leg_linked'), 'postings', LINKED)
    op.execute(POSTED)
    op.execute(
        "CREATE CONSTRAINT TRIGGER ledger_entries_posted AFTER INSERT ON ledger_entries "
        "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_entry_posted()"
    )


def downgrade():
    op.execute('DROP TRIGGER ledger_entries_posted ON ledger_entries')
    op.execute('DROP FUNCTION ledger_entry_posted()')
    op.drop_constraint(op.f('ck_postings_wallet_leg_linked'), 'postings', type_='check')
    op.drop_constraint(op.f('uq_postings_ledger_entry_id'), 'postings', type_='unique')
    op.drop_constraint(op.f('fk_postings_ledger_entry_id_ledger_entries'), 'postings',
                       type_='foreignkey')
    # The carried-in entries go with the link (the journal is append-only otherwise).
    for table in ('postings', 'journal_entries'):
        op.execute(f'ALTER TABLE {table} DISABLE TRIGGER {table}_append_only')
    op.execute("DELETE FROM postings WHERE entry_id IN "
               "(SELECT id FROM journal_entries WHERE source_kind = 'ledger')")
    op.execute("DELETE FROM journal_entries WHERE source_kind = 'ledger'")
    for table in ('postings', 'journal_entries'):
        op.execute(f'ALTER TABLE {table} ENABLE TRIGGER {table}_append_only')
    op.drop_column('postings', 'ledger_entry_id')
    _account_pattern(OLD_ACCOUNT)
    _allow('ledger_entries', 'source_kind', 'ck_ledger_entries_ledger_source_kind', OLD_KINDS)
    _allow('journal_entries', 'source_kind', 'ck_journal_entries_journal_source_kind', OLD_KINDS)
