"""Fault injection: what can go wrong between a client and a provider, on demand.

A fault has a kind, an optional target (dialect `stripe`/`braintree`, endpoint
`create`/`retrieve`/`search`/`list`/`events`), a share of matching requests
(`rate`, 0..1) and optionally a number of requests it applies to (`count`).
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

from sandbox.store import Store, dumps

# kind -> (parameters with defaults, description) — the list docs/sandbox.md and --help show.
FAULT_KINDS: dict[str, tuple[dict[str, Any], str]] = {
    "latency": ({"ms": 300}, "add latency before answering"),
    "hang": ({"seconds": 30}, "hold the request for N seconds, then process it"),
    "error": (
        {"status": 500, "retry_after": None, "phase": "before", "html": False},
        "answer 400/404/429/500/502/503; phase=before: nothing processed (a POST's 500 "
        "is stored under the idempotency key like Stripe does), phase=after: processed "
        "first; phase=stored: processed, and the 500 is what Stripe stores under the key "
        "(its replays answer 500 too); html=true: an HTML page, as a proxy would answer",
    ),
    "reset_before": ({}, "reset the connection before processing"),
    "reset_after": ({}, "process, then reset the connection without answering"),
    "commit_timeout": (
        {"hold_s": 30, "until_deleted": False},
        "process and commit, then hold the answer past the client's read timeout; "
        "until_deleted=true: hold it until the fault is deleted (at most hold_s), so a "
        "test lets it go when what it waits for has happened",
    ),
    "refuse": ({"seconds": 5}, "stop listening for N seconds (connection refused)"),
    "tamper": (
        {"field": "amount", "value": 1},
        "process normally, then answer with one field of the payment object(s) changed "
        "(amount, currency, id, reference, metadata.payment_id, status): a hostile or buggy "
        "provider, or one that answers before it has finished (status=processing)",
    ),
    "search_lag": (
        {"seconds": 3600},
        "search sees only intents older than this (Stripe's index during an outage; "
        "--search-lag-s sets the normal lag)",
    ),
    "webhook_duplicate": ({"copies": 2}, "deliver each event this many times"),
    "webhook_reorder": ({"max_delay_s": 2.0}, "delay events randomly so later ones overtake"),
    "webhook_delay": ({"seconds": 5}, "delay each event's first delivery"),
    "webhook_drop": ({}, "never deliver the event (it stays listed as undelivered)"),
}
# Drawn per request; `refuse` is not among them: it acts once, when it is added.
REQUEST_KINDS = (
    "latency",
    "hang",
    "error",
    "reset_before",
    "reset_after",
    "commit_timeout",
    "tamper",
    "search_lag",
)
TAMPER_FIELDS = ("amount", "currency", "id", "reference", "metadata.payment_id", "status")
WEBHOOK_KINDS = ("webhook_duplicate", "webhook_reorder", "webhook_delay", "webhook_drop")


class FaultError(ValueError):
    """A fault definition was refused; the message names the bad field."""


@dataclass
class Fault:
    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    id: int = 0


def fault_exists(store: Store, fault_id: int) -> bool:
    return bool(store.query("SELECT 1 FROM faults WHERE id = ?", (fault_id,)))


def add_fault(store: Store, spec: dict[str, Any]) -> int:
    """Validate and store a fault; return its id."""
    kind = spec.get("kind")
    if kind not in FAULT_KINDS:
        raise FaultError(f"kind must be one of {', '.join(FAULT_KINDS)}")
    defaults, _ = FAULT_KINDS[kind]
    params = {**defaults, **{k: v for k, v in spec.items() if k in defaults}}
    rate = spec.get("rate", 1.0)
    if not isinstance(rate, int | float) or not 0 <= rate <= 1:
        raise FaultError("rate must be a number between 0 and 1")
    count = spec.get("count")
    if count is not None and (not isinstance(count, int) or count < 1):
        raise FaultError("count must be a positive integer")
    dialect = spec.get("dialect")
    if dialect not in (None, "stripe", "braintree"):
        raise FaultError("dialect must be 'stripe' or 'braintree'")
    if kind == "error" and params["status"] not in (400, 401, 403, 404, 429, 500, 502, 503):
        raise FaultError("status must be 400, 401, 403, 404, 429, 500, 502 or 503")
    if kind == "error" and params["phase"] not in ("before", "after", "stored"):
        raise FaultError("phase must be 'before', 'after' or 'stored'")
    if kind == "error" and params["phase"] == "stored" and params["status"] != 500:
        raise FaultError("phase 'stored' is for status 500 (what Stripe keeps under a key)")
    if kind == "search_lag" and (
        not isinstance(params["seconds"], int | float) or params["seconds"] < 0
    ):
        raise FaultError("seconds must be a number >= 0")
    if kind == "commit_timeout" and not isinstance(params["until_deleted"], bool):
        raise FaultError("until_deleted must be true or false")
    if kind == "tamper" and params["field"] not in TAMPER_FIELDS:
        raise FaultError(f"field must be one of {', '.join(TAMPER_FIELDS)}")
    with store.transaction() as conn:
        cur = conn.execute(
            "INSERT INTO faults (kind, dialect, endpoint, rate, remaining, params, created) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (kind, dialect, spec.get("endpoint"), float(rate), count, dumps(params), time.time()),
        )
        return int(cur.lastrowid or 0)


def list_faults(store: Store) -> list[dict[str, Any]]:
    return [
        {
            "id": r["id"],
            "kind": r["kind"],
            "dialect": r["dialect"],
            "endpoint": r["endpoint"],
            "rate": r["rate"],
            "remaining": r["remaining"],
            **json.loads(r["params"]),
        }
        for r in store.query("SELECT * FROM faults ORDER BY id")
    ]


def clear_faults(store: Store, fault_id: int | None = None) -> None:
    with store.transaction() as conn:
        if fault_id is None:
            conn.execute("DELETE FROM faults")
        else:
            conn.execute("DELETE FROM faults WHERE id = ?", (fault_id,))


def draw_faults(
    store: Store,
    kinds: tuple[str, ...],
    dialect: str,
    endpoint: str,
    conn: sqlite3.Connection | None = None,
) -> list[Fault]:
    """The faults that hit this request, each drawn by its rate; counted ones are used up.

    Runs in `conn`'s transaction when given, else in a transaction of its own.
    """
    if conn is None:
        with store.transaction() as own:
            return draw_faults(store, kinds, dialect, endpoint, own)
    hit: list[Fault] = []
    rows = conn.execute(
        f"SELECT * FROM faults WHERE kind IN ({','.join('?' * len(kinds))}) "
        "AND (dialect IS NULL OR dialect = ?) AND (endpoint IS NULL OR endpoint = ?) "
        "AND (remaining IS NULL OR remaining > 0) ORDER BY id",
        (*kinds, dialect, endpoint),
    ).fetchall()
    for row in rows:
        if random.random() >= row["rate"]:
            continue
        if row["remaining"] is not None:
            conn.execute("UPDATE faults SET remaining = remaining - 1 WHERE id = ?", (row["id"],))
        hit.append(Fault(row["kind"], json.loads(row["params"]), row["id"]))
    return hit


def tamper(body: Any, field_path: str, value: Any) -> Any:
    """Set `field_path` on the payment object in `body` (or on each one of a list)."""
    targets = body.get("data") if isinstance(body.get("data"), list) else [body]
    for target in targets:
        if not isinstance(target, dict):
            continue
        *parents, name = field_path.split(".")
        for parent in parents:
            target = target.setdefault(parent, {})
        target[name] = value
    return body
