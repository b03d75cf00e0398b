"""Provider events: created with each charge, signed like the real thing, delivered >= once."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import random
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import requests

from sandbox.braintree.notifications import notification_xml, signed_form
from sandbox.faults import WEBHOOK_KINDS, draw_faults
from sandbox.store import Store
from sandbox.stripe.objects import event_object

log = logging.getLogger("sandbox.webhooks")

MAX_DELIVERY_ATTEMPTS = 8  # then the event stays listed as undelivered for backfill
DELIVERY_TIMEOUT_S = (2.0, 5.0)  # (connect, read): a receiver should answer in milliseconds
POLL_INTERVAL_S = 0.1


def stripe_signature(secret: str, body: bytes, timestamp: int) -> str:
    """Stripe's scheme: t=<unix>,v1=<hex HMAC-SHA256 of "t.body">."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def create_event(
    store: Store,
    conn: sqlite3.Connection,
    dialect: str,
    event_type: str,
    obj: dict[str, Any],
    request_info: tuple[str | None, str | None] = (None, None),
) -> str:
    """Record an event in the caller's transaction, shaped by any webhook faults.
    `request_info`: the API request (id, idempotency key) that caused it (Stripe)."""
    now = int(time.time())
    if dialect == "stripe":
        body = event_object(event_type, obj, *request_info)
        event_id = body["id"]
    else:  # braintree: a notification, its kind and subject (notifications.py)
        event_id = "bte_" + secrets.token_hex(12)
        body = {"kind": event_type, "created": now, **obj}
    copies, delay_s, is_dropped = 1, 0.0, 0
    for fault in draw_faults(store, WEBHOOK_KINDS, dialect, "webhooks", conn):
        if fault.kind == "webhook_duplicate":
            copies = max(copies, int(fault.params["copies"]))
        elif fault.kind == "webhook_reorder":
            delay_s += random.uniform(0, float(fault.params["max_delay_s"]))
        elif fault.kind == "webhook_delay":
            delay_s += float(fault.params["seconds"])
        elif fault.kind == "webhook_drop":
            is_dropped = 1
    conn.execute(
        "INSERT INTO events (id, dialect, type, created, body, copies, next_attempt_at, "
        "is_dropped) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            event_id,
            dialect,
            event_type,
            now,
            json.dumps(body),
            copies,
            time.time() + delay_s,
            is_dropped,
        ),
    )
    return event_id


class Deliverer(threading.Thread):
    """Posts due events to `<webhook_url>/<dialect>`, retrying non-2xx with backoff."""

    def __init__(
        self,
        store: Store,
        webhook_url: str,
        secrets_by_dialect: dict[str, str],
        on_tick: Callable[[], object] = lambda: None,
        braintree_keys: tuple[str, str] = ("", ""),
    ):
        super().__init__(name="webhook-deliverer", daemon=True)
        self.store = store
        self.on_tick = on_tick  # what else changes with time (refunds that settle later)
        self.webhook_url = webhook_url.rstrip("/")
        self.secrets = secrets_by_dialect
        self.braintree_keys = braintree_keys  # (public, private): Braintree signs with both
        self.session = requests.Session()

    def run(self) -> None:
        while True:
            try:
                self.on_tick()
                if not self.deliver_due():
                    time.sleep(POLL_INTERVAL_S)
            except Exception:  # the deliverer must outlive any one bad delivery
                log.exception("webhook delivery loop failed; continuing")
                time.sleep(1)

    def deliver_due(self) -> bool:
        generation = self.store.generation
        rows = self.store.query(
            "SELECT * FROM events WHERE delivered_at IS NULL AND is_dropped = 0 "
            "AND attempts < ? AND next_attempt_at <= ? ORDER BY next_attempt_at, rowid LIMIT 20",
            (MAX_DELIVERY_ATTEMPTS, time.time()),
        )
        for row in rows:
            if self.store.generation != generation:
                return True  # reset since this batch was read: its events are gone
            self.deliver(row)
        return bool(rows)

    def deliver(self, row: sqlite3.Row) -> None:
        body = row["body"].encode()
        timestamp = int(time.time())
        if row["dialect"] == "braintree":
            xml = notification_xml(json.loads(row["body"]))
            body = urlencode(signed_form(*self.braintree_keys, xml)).encode()
            headers = {"Content-Type": "application/x-www-form-urlencoded"}
        else:
            secret = self.secrets["stripe"]
            headers = {"Stripe-Signature": stripe_signature(secret, body, timestamp)}
            headers["Content-Type"] = "application/json"
        try:
            response = self.session.post(
                f"{self.webhook_url}/{row['dialect']}",
                data=body,
                headers=headers,
                timeout=DELIVERY_TIMEOUT_S,
            )
            is_ok = 200 <= response.status_code < 300
        except requests.RequestException:
            is_ok = False
        with self.store.transaction() as conn:
            if is_ok and row["copies"] > 1:
                conn.execute("UPDATE events SET copies = copies - 1 WHERE id = ?", (row["id"],))
            elif is_ok:
                conn.execute(
                    "UPDATE events SET delivered_at = ?, attempts = attempts + 1 WHERE id = ?",
                    (time.time(), row["id"]),
                )
            else:
                backoff_s = min(2 ** row["attempts"], 60) * random.uniform(0.5, 1.0)
                conn.execute(
                    "UPDATE events SET attempts = attempts + 1, next_attempt_at = ? WHERE id = ?",
                    (time.time() + backoff_s, row["id"]),
                )
