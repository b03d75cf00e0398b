"""Braintree's webhook scheme, judged by Braintree's SDK: what the SDK's `parse` accepts we
accept, what it refuses we refuse; notifications become the events of the kinds that
exist (a charge settled, a refund's credit, a dispute, a settlement decline as a dispute
lost)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import braintree
import pytest

from providers.braintree.webhooks import (
    load_braintree,
    parse_braintree,
    verify_braintree,
)
from providers.events import WebhookError
from sandbox.braintree.notifications import signed_form
from sandbox.braintree.xml import render

PUBLIC, PRIVATE = "sandbox_public_key", "sandbox_private_key"
NOW = datetime(2026, 12, 6, 10, 0, tzinfo=UTC)


def _sdk() -> braintree.BraintreeGateway:
    return braintree.BraintreeGateway(
        braintree.Configuration(braintree.Environment.Sandbox, "sandbox_merchant", PUBLIC, PRIVATE)
    )


def _delivery(kind: str, subject: dict[str, Any], private: str = PRIVATE) -> tuple[dict, bytes]:
    xml = render("notification", {"timestamp": NOW, "kind": kind, "subject": subject})
    form = signed_form(PUBLIC, private, xml)
    return form, urlencode(form).encode()


def _sale(**fields: Any) -> dict[str, Any]:
    return {
        "transaction": {
            "id": "txn1",
            "type": "sale",
            "status": "settled",
            "amount": "12.34",
            "currency_iso_code": "EUR",
            "order_id": "ref-1",
            **fields,
        }
    }


def _event(kind: str, subject: dict[str, Any]) -> Any:
    _, body = _delivery(kind, subject)
    verify_braintree({}, body, PRIVATE, time.time())
    return parse_braintree(load_braintree(body))


def test_a_delivery_the_sdk_accepts_is_verified_and_one_it_refuses_is_not() -> None:
    form, body = _delivery("transaction_settled", _sale())
    parsed = _sdk().webhook_notification.parse(form["bt_signature"], form["bt_payload"])
    assert parsed.kind == "transaction_settled" and parsed.transaction.id == "txn1"
    verify_braintree({}, body, PRIVATE, time.time())
    forged_form, forged = _delivery("transaction_settled", _sale(), private="another_key")
    with pytest.raises(braintree.exceptions.InvalidSignatureError):
        _sdk().webhook_notification.parse(forged_form["bt_signature"], forged_form["bt_payload"])
    with pytest.raises(WebhookError, match="no valid signature"):
        verify_braintree({}, forged, PRIVATE, time.time())


def test_a_changed_payload_is_refused() -> None:
    form, _ = _delivery("transaction_settled", _sale())
    other, _ = _delivery("transaction_settled", _sale(amount="99.99"))
    body = urlencode({"bt_signature": form["bt_signature"], "bt_payload": other["bt_payload"]})
    with pytest.raises(WebhookError, match="no valid signature"):
        verify_braintree({}, body.encode(), PRIVATE, time.time())


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b'{"bt_signature": "x"}',
        b"bt_signature=a%7Cb",
        b"bt_signature=a%7Cb&bt_payload=not%20base64!",
        b"bt_signature=a%7Cb&bt_signature=c%7Cd&bt_payload=QUJD",
        b"\xff\xfe",
    ],
)
def test_a_body_that_is_not_a_signed_form_is_refused(body: bytes) -> None:
    with pytest.raises(WebhookError):
        verify_braintree({}, body, PRIVATE, time.time())


def test_a_payload_that_is_not_a_notification_is_refused() -> None:
    for xml in (b"<transaction><id>1</id></transaction>", b"<!DOCTYPE x><notification/>"):
        body = urlencode(signed_form(PUBLIC, PRIVATE, xml)).encode()
        verify_braintree({}, body, PRIVATE, time.time())  # signed, and still not one
        with pytest.raises(WebhookError):
            load_braintree(body)


def test_a_sale_settled_is_a_success_with_our_reference_and_amount() -> None:
    event = _event("transaction_settled", _sale())
    assert (event.kind, event.outcome, event.provider_id) == ("charge", "succeeded", "txn1")
    assert (event.report.amount_minor, event.report.currency) == (1234, "EUR")
    assert event.report.reference == "ref-1"
    assert event.event_id == f"transaction_settled:txn1:{NOW.isoformat()}"  # same on redelivery
    assert event.created_at == NOW


def test_a_settlement_declined_is_the_charges_failure_never_a_dispute() -> None:
    event = _event(
        "transaction_settlement_declined",
        _sale(status="settlement_declined", processor_settlement_response_code="4001"),
    )
    assert (event.kind, event.outcome, event.provider_id) == ("charge", "failed", "txn1")
    assert event.dispute is None and event.takes_back_success
    assert (event.report.amount_minor, event.report.currency) == (1234, "EUR")
    assert event.report.reference == "ref-1" and event.decline_code == "4001"


def test_a_credit_is_our_refund() -> None:
    subject = _sale(id="cr1", type="credit", order_id="refund-ref", refunded_transaction_id="txn1")
    settled = _event("transaction_settled", subject)
    assert (settled.kind, settled.outcome, settled.provider_id) == ("refund", "succeeded", "cr1")
    assert settled.parent_payment_id == "txn1" and settled.report.reference == "refund-ref"
    declined = _event("transaction_settlement_declined", subject)
    assert (declined.kind, declined.outcome) == ("refund", "failed")


@pytest.mark.parametrize(
    ("kind", "status", "dispute_kind", "ours"),
    [
        ("dispute_opened", "open", "chargeback", "needs_response"),
        ("dispute_disputed", "disputed", "chargeback", "under_review"),
        ("dispute_won", "won", "chargeback", "won"),
        ("dispute_lost", "lost", "chargeback", "lost"),
        ("dispute_accepted", "accepted", "chargeback", "lost"),
        ("dispute_expired", "expired", "chargeback", "lost"),
        ("dispute_opened", "open", "retrieval", "warning_needs_response"),
        ("dispute_lost", "lost", "retrieval", "warning_closed"),
    ],
)
def test_a_disputes_status_in_the_dispute_kinds_words(
    kind: str, status: str, dispute_kind: str, ours: str
) -> None:
    dispute = {
        "id": "dp1",
        "kind": dispute_kind,
        "status": status,
        "reason": "fraud",
        "amount_disputed": "12.34",
        "currency_iso_code": "EUR",
        "reply_by_date": datetime(2026, 12, 20, tzinfo=UTC).date(),
        "transaction": {"id": "txn1", "amount": "12.34", "order_id": "ref-1"},
    }
    event = _event(kind, {"dispute": dispute})
    assert (event.kind, event.provider_id, event.parent_payment_id) == ("dispute", "dp1", "txn1")
    assert event.dispute is not None and event.dispute.status == ours
    assert event.dispute.is_inquiry == (dispute_kind == "retrieval")
    assert event.dispute.amount_minor == 1234 and event.dispute.reason == "fraud"
    assert event.dispute.evidence_due_by == datetime(2026, 12, 20, tzinfo=UTC)


def test_another_kind_is_recorded_and_moves_nothing() -> None:
    event = _event("subscription_charged_successfully", {"subscription": {"id": "s1"}})
    assert event.outcome is None and event.kind == "charge" and event.provider_id is None
