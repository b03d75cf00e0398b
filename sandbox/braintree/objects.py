"""A Braintree transaction as the sandbox keeps it (JSON, times as epoch seconds in
`*_s` fields) and as the gateway shows it (Braintree's fields, times as datetimes)."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime
from typing import Any


def step(txn: dict[str, Any], status: str, at: float | None = None) -> None:
    """Move the transaction to `status`, in its status history."""
    now = at if at is not None else time.time()
    txn["status"] = status
    txn["updated_at_s"] = now
    txn["status_history"].append({"status": status, "timestamp_s": now, "amount": txn["amount"]})


def shown(txn: dict[str, Any]) -> dict[str, Any]:
    """The transaction as Braintree's XML has it."""
    found = {k: v for k, v in txn.items() if not k.endswith("_s")}
    found["created_at"] = datetime.fromtimestamp(txn["created_at_s"], UTC)
    found["updated_at"] = datetime.fromtimestamp(txn["updated_at_s"], UTC)
    details = txn.get("disbursement_details")
    if isinstance(details, dict):
        disbursed = date.fromisoformat(details["disbursement_date"])
        found["disbursement_details"] = {**details, "disbursement_date": disbursed}
    found["status_history"] = [
        {
            "status": event["status"],
            "timestamp": datetime.fromtimestamp(event["timestamp_s"], UTC),
            "amount": event["amount"],
        }
        for event in txn["status_history"]
    ]
    return found


def shown_dispute(dispute: dict[str, Any]) -> dict[str, Any]:
    """A dispute as Braintree's XML has it."""
    found = {k: v for k, v in dispute.items() if not k.endswith("_s")}
    found["created_at"] = datetime.fromtimestamp(dispute["created_at_s"], UTC)
    found["updated_at"] = datetime.fromtimestamp(dispute["updated_at_s"], UTC)
    found["received_date"] = datetime.fromtimestamp(dispute["created_at_s"], UTC).date()
    found["status_history"] = [
        {
            "status": event["status"],
            "timestamp": datetime.fromtimestamp(event["at_s"], UTC),
            # The day the change took effect on the merchant's balance.
            "effective_date": datetime.fromtimestamp(event["at_s"], UTC).date(),
        }
        for event in dispute["status_history"]
    ]
    return found
