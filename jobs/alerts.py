"""RQ entry point for alerts a provider worker raises at once (maintenance queue)."""

from __future__ import annotations

from services.backoffice import alerts


def raise_alert_job(kind: str, dedupe_key: str, detail: str) -> bool:
    """Write the alert and its email once (its key is UNIQUE): safe to run twice."""
    return alerts.raise_now(kind, dedupe_key, detail)
