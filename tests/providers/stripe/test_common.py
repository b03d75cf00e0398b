"""The replay window test and reading Stripe's errors (no error body, a 5xx, a 429)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import requests

from providers.stripe.common import error_of, is_within, lookup_failed


def _response(status: int, body: bytes) -> requests.Response:
    response = requests.Response()
    response.status_code, response._content = status, body
    return response


def test_the_replay_window() -> None:
    now = datetime.now(UTC)
    assert is_within(now - timedelta(seconds=10), 60)
    assert not is_within(now - timedelta(seconds=61), 60)
    assert not is_within(None, 60)  # never sent: nothing to replay


def test_errors_that_say_nothing_about_the_payment_are_unknown() -> None:
    html = _response(404, b"<html>not found</html>")
    assert error_of(html) == {}
    unknown = lookup_failed("retrieve", html, {})
    assert "no Stripe error body" in unknown.reason and not unknown.is_provider_failure
    assert lookup_failed("search", _response(503, b"{}"), {}).is_provider_failure
    assert lookup_failed("search", _response(429, b"{}"), {}).is_provider_failure
