"""The acquirer's webhook scheme: its own signature headers, our reference echoed."""

from __future__ import annotations

import time

import pytest

from providers.acquirer.webhooks import parse_acquirer, verify_acquirer
from providers.events import WebhookError
from sandbox.events import acquirer_signature

SECRET = "acqwh_test"


def test_the_signature_covers_timestamp_and_body() -> None:
    body, now = b'{"event_id": "aev_1"}', int(time.time())
    headers = {
        "x-acquirer-timestamp": str(now),
        "x-acquirer-signature": acquirer_signature(SECRET, body, now),
    }
    verify_acquirer(headers, body, SECRET, now)
    with pytest.raises(WebhookError, match="no valid signature"):
        verify_acquirer({**headers, "x-acquirer-timestamp": str(now - 1)}, body, SECRET, now)
    with pytest.raises(WebhookError, match="missing"):
        verify_acquirer({}, body, SECRET, now)


def test_an_approved_payment_reports_our_reference() -> None:
    event = parse_acquirer(
        {
            "event_id": "aev_1",
            "type": "payment.approved",
            "created": 1_800_000_000,
            "payment": {
                "id": "acq_1",
                "reference": "5f0c7a1e-0000-4000-8000-000000000001",
                "amount": 900,
                "currency": "EUR",
            },
        }
    )
    assert event.outcome == "succeeded" and event.provider_id == "acq_1"
    assert event.report.reference == "5f0c7a1e-0000-4000-8000-000000000001"
    assert event.report.amount_minor == 900 and event.report.our_id is None


def test_a_payment_event_must_name_our_reference() -> None:
    with pytest.raises(WebhookError, match=r"payment\.reference"):
        parse_acquirer(
            {"event_id": "aev_2", "type": "payment.declined", "created": 1, "payment": {"id": "a"}}
        )
