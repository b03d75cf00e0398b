"""What the Stripe client's calls share: the replay window test and reading errors."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import requests

from providers.http import json_object
from providers.outcomes import Unknown


def is_within(first_sent_at: datetime | None, seconds: float) -> bool:
    if first_sent_at is None:
        return False
    return (datetime.now(UTC) - first_sent_at).total_seconds() < seconds


def error_of(response: requests.Response) -> dict[str, Any]:
    error = json_object(response).get("error")
    return error if isinstance(error, dict) else {}


def lookup_failed(what: str, response: requests.Response, error: dict[str, Any]) -> Unknown:
    status = response.status_code
    detail = error.get("message") or error.get("code") or "no Stripe error body"
    return Unknown(
        f"{what} answered {status}: {str(detail)[:200]}",
        is_provider_failure=status == 429 or status >= 500,
    )
