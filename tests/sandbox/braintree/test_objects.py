"""A kept transaction moves through its statuses with their times, and is shown with
Braintree's fields and datetimes."""

from __future__ import annotations

from datetime import UTC, datetime

from sandbox.braintree.objects import shown, step


def test_a_step_is_kept_in_the_history_and_shown_as_braintree_does() -> None:
    txn = {"id": "abc", "amount": "10.00", "created_at_s": 0.0, "updated_at_s": 0.0}
    txn["status_history"] = []
    step(txn, "authorized", 10.0)
    step(txn, "submitted_for_settlement", 20.0)
    seen = shown(txn)
    assert seen["status"] == "submitted_for_settlement"
    assert seen["updated_at"] == datetime.fromtimestamp(20.0, UTC)
    assert [e["status"] for e in seen["status_history"]] == [
        "authorized",
        "submitted_for_settlement",
    ]
    assert seen["status_history"][0]["timestamp"] == datetime.fromtimestamp(10.0, UTC)
    assert not any(key.endswith("_s") for key in seen)
