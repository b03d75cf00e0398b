"""The sandbox's state file: one provider for every thread and process, and an older file
is brought up to date (whole PaymentIntent objects built from its columns)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from sandbox.store import Store


def test_an_older_state_file_gets_whole_intents(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE payment_intents (id TEXT PRIMARY KEY, amount INTEGER NOT NULL, "
        "currency TEXT NOT NULL, status TEXT NOT NULL, payment_method TEXT, "
        "metadata TEXT NOT NULL, last_payment_error TEXT, created INTEGER NOT NULL)"
    )
    conn.execute(
        "INSERT INTO payment_intents VALUES ('pi_old', 1200, 'eur', 'succeeded', "
        "'pm_card_visa', '{\"payment_id\": \"5\"}', NULL, 1700000000)"
    )
    conn.commit()
    conn.close()
    store = Store(str(path))
    body = json.loads(store.query("SELECT body FROM payment_intents")[0]["body"])
    assert (body["id"], body["status"], body["amount_received"]) == ("pi_old", "succeeded", 1200)
    assert body["metadata"] == {"payment_id": "5"} and body["object"] == "payment_intent"
    assert "api_version" in {r["name"] for r in store.query("PRAGMA table_info(requests)")}


def test_a_reset_empties_every_table_and_starts_a_new_generation(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    store.log_request("stripe", "create", "POST", "k", None)
    generation = store.generation
    store.reset()
    assert store.query("SELECT * FROM requests") == [] and store.generation == generation + 1
