"""Stripe's lists and search: newest first, `limit` (default 10, max 100), cursors
(`starting_after`, `ending_before`) and `has_more`; search pages by an opaque `page`
token with `next_page`, and understands Stripe's query language for PaymentIntents."""

from __future__ import annotations

import base64
import re
import sqlite3
from typing import Any

from sandbox.stripe.params import ParamError

# Search: field, operator, value; clauses joined by AND or OR (not both), at most 10.
CLAUSE_RE = re.compile(
    r"""^(-)?(metadata\[['"]([A-Za-z0-9_\-]{1,40})['"]\]|amount|created|currency|customer|status)"""
    r"""(:|>=|<=|>|<|~)('[^']*'|"[^"]*"|-?\d+|null)$"""
)
JSON_PATHS = {
    "amount": "$.amount",
    "created": "$.created",
    "currency": "$.currency",
    "customer": "$.customer",
    "status": "$.status",
}


def page(
    conn: sqlite3.Connection,
    table: str,
    where: str,
    args: tuple[Any, ...],
    *,
    starting_after: str | None,
    ending_before: str | None,
    limit: int,
    what: str,
) -> tuple[list[sqlite3.Row], bool]:
    """One page of `table` (newest first), and whether more follow in that direction."""
    order, cursor_args = "DESC", tuple[Any, ...]()
    if starting_after or ending_before:
        cursor = starting_after or ending_before
        found = conn.execute(f"SELECT rowid FROM {table} WHERE id = ?", (cursor,)).fetchone()
        if found is None:
            raise ParamError(f"No such {what}: '{cursor}'", "starting_after", "resource_missing")
        where += " AND rowid < ?" if starting_after else " AND rowid > ?"
        order = "DESC" if starting_after else "ASC"
        cursor_args = (found[0],)
    rows = conn.execute(
        f"SELECT * FROM {table} WHERE {where} ORDER BY rowid {order} LIMIT ?",
        (*args, *cursor_args, limit + 1),
    ).fetchall()
    has_more = len(rows) > limit
    rows = rows[:limit]
    if order == "ASC":
        rows.reverse()  # Stripe answers newest first whichever way the cursor points
    return rows, has_more


def search_condition(query: str) -> tuple[str, tuple[Any, ...]]:
    """SQL over the stored intent body for a Stripe search query; raises ParamError."""
    query = query.strip()
    if not query:
        raise ParamError("Missing required param: query.", "query", "parameter_missing")
    has_and, has_or = " AND " in query, " OR " in query
    if has_and and has_or:
        raise ParamError("Queries cannot mix AND and OR.", "query")
    clauses = re.split(r" AND | OR ", query)
    if len(clauses) > 10:
        raise ParamError("Queries may have at most 10 clauses.", "query")
    parts, args = [], []
    for clause in clauses:
        match = CLAUSE_RE.match(clause.strip())
        if match is None:
            raise ParamError(f"Invalid query clause: {clause.strip()[:80]}", "query")
        negated, field, meta_key, operator, raw = match.groups()
        path = f"$.metadata.{meta_key}" if meta_key else JSON_PATHS[field]
        value: Any = None if raw == "null" else raw[1:-1] if raw[0] in "'\"" else int(raw)
        if operator == "~":
            if not isinstance(value, str) or len(value) < 3:
                raise ParamError("Substring matches need at least 3 characters.", "query")
            sql, value = f"json_extract(body, '{path}') LIKE ?", f"%{value}%"
        elif value is None:
            sql = f"json_extract(body, '{path}') IS NULL"
        else:
            sql = f"json_extract(body, '{path}') {'=' if operator == ':' else operator} ?"
        parts.append(f"NOT ({sql})" if negated else sql)
        if value is not None:
            args.append(value)
    return "(" + (" OR " if has_or else " AND ").join(parts) + ")", tuple(args)


def encode_page(rowid: int) -> str:
    return base64.urlsafe_b64encode(f"rowid:{rowid}".encode()).decode()


def decode_page(token: str | None) -> int | None:
    if not token:
        return None
    try:
        kind, _, raw = base64.urlsafe_b64decode(token.encode()).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        raise ParamError("Invalid page token.", "page") from None
    if kind != "rowid" or not raw.isdigit():
        raise ParamError("Invalid page token.", "page")
    return int(raw)
