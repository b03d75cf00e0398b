"""What the app's database role may do (docs/books.md, "The roles"): it owns nothing, so
it can change no table, trigger or constraint (no DDL, no TRIGGER, no TRUNCATE); it reads
and writes rows, and of the books' journal and evidence it may only add rows. The
migrations run as the owner (DATABASE_OWNER_URL) and grant this after every run
(migrations/env.py), so a new table is the app's to use as soon as it exists."""

from __future__ import annotations

import re

# Rows are added, never changed or deleted (their triggers refuse it too: migrations
# 0028, 0033); the app's role is not even granted it.
APPEND_ONLY = (
    "journal_entries",
    "postings",
    "ledger_entries",
    "provider_balance_transactions",
    "balance_matches",
    "payout_contents",
    "provider_balance_corrections",
    "book_day_audit",
)
# A day's close is written by book_day_audit's trigger (migration 0034), never by the app:
# of a day's row the app's role may update only what a reconciliation says.
DAY_COLUMNS = "status, matched, unmatched, reconciled_at"
ROLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def grants(app_role: str, tables: set[str]) -> list[str]:
    """The statements (run by the owner) that give the app's role what it may do, on
    the schema's `tables` (those of the revision it is at)."""
    if not ROLE_NAME.match(app_role):
        raise ValueError(f"not a role name we grant to: {app_role!r}")
    statements = [
        f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {app_role}",
        f"GRANT USAGE ON SCHEMA public TO {app_role}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {app_role}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {app_role}",
    ]
    if "alembic_version" in tables:
        statements.append(f"REVOKE INSERT, UPDATE, DELETE ON alembic_version FROM {app_role}")
    if "book_day_audit" in tables:
        statements += [
            f"REVOKE UPDATE, DELETE ON reconciliation_days FROM {app_role}",
            f"GRANT UPDATE ({DAY_COLUMNS}) ON reconciliation_days TO {app_role}",
        ]
    append_only = [table for table in APPEND_ONLY if table in tables]
    if append_only:
        statements.append(f"REVOKE UPDATE, DELETE ON {', '.join(append_only)} FROM {app_role}")
    return statements
