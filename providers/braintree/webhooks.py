"""Braintree's webhooks: a form POST of `bt_signature` and `bt_payload` (the base64 of the
notification's XML), verified as Braintree's SDK verifies them (`webhook_notification_
gateway.py`): the signature `<public key>|<hex HMAC-SHA1 of the payload, keyed by the
SHA-1 of the private key>`, several pairs joined by `&` during a key rotation. The
notification is parsed only once its signature holds, by the SDK's own XML codec.

Kinds read: a sale's `transaction_settled` (the money arrived: a success, never
backwards) and `transaction_settlement_declined` (the money never arrives: the charge
failed, and a success reported before is taken back, its entry reversed exactly; never a
dispute, which only a sale whose money we received can have); a credit's (our refund's)
settled or settlement declined; `dispute_*` (its status says where it is). Other kinds are
recorded and move nothing. Braintree's notifications carry no id: the event's id is its
kind, subject and time, the same on every redelivery."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs

from braintree.util.xml_util import XmlUtil

from providers.braintree.answers import amount_minor, transaction_report
from providers.events import (
    DisputeFacts,
    ProviderEvent,
    WebhookError,
    bounded_time,
    required_field,
)
from providers.outcomes import Report

PAYLOAD_CHARS = re.compile(rb"[A-Za-z0-9+=/\n]+")  # base64 in lines, nothing else

SETTLED = "transaction_settled"
SETTLEMENT_DECLINED = "transaction_settlement_declined"

# Braintree's dispute statuses in the dispute kind's words (models.dispute.DisputeStatus):
# a chargeback's, and a retrieval's (an inquiry: the bank asks, nothing is withdrawn).
CHARGEBACK_STATUSES = {
    "open": "needs_response",
    "disputed": "under_review",
    "won": "won",
    "lost": "lost",
    "accepted": "lost",
    "expired": "lost",  # no answer by the reply-by date: lost
}
RETRIEVAL_STATUSES = {
    "open": "warning_needs_response",
    "disputed": "warning_under_review",
    "won": "warning_closed",
    "lost": "warning_closed",
    "accepted": "warning_closed",
    "expired": "warning_closed",
}


def _form(body: bytes) -> tuple[str, bytes]:
    try:
        fields = parse_qs(body.decode("ascii"), strict_parsing=True, max_num_fields=4)
    except (UnicodeDecodeError, ValueError):
        raise WebhookError("body is not a form of bt_signature and bt_payload") from None
    signature, payload = fields.get("bt_signature"), fields.get("bt_payload")
    if not signature or not payload or len(signature) != 1 or len(payload) != 1:
        raise WebhookError("missing bt_signature or bt_payload")
    if not PAYLOAD_CHARS.fullmatch(payload[0].encode()):
        raise WebhookError("bt_payload is not base64")
    return signature[0], payload[0].encode()


def verify_braintree(headers: Mapping[str, str], body: bytes, secret: str, now: float) -> None:
    """`secret` is the private key; any pair's HMAC may match (the public key names the
    pair, the HMAC proves it)."""
    signature, payload = _form(body)
    key = hashlib.sha1(secret.encode()).digest()
    given = [pair.split("|", 1)[1] for pair in signature.split("&") if "|" in pair]
    for candidate in (payload, payload + b"\n"):  # as the SDK: a trailing newline or not
        expected = hmac.new(key, candidate, hashlib.sha1).hexdigest()
        if any(hmac.compare_digest(expected, mac.strip()) for mac in given):
            return
    raise WebhookError("no valid signature")


def load_braintree(body: bytes) -> dict[str, Any]:
    """The verified notification as a JSON object (times as ISO 8601 text)."""
    _, payload = _form(body)
    try:
        xml = base64.decodebytes(payload)
    except binascii.Error:
        raise WebhookError("bt_payload is not base64") from None
    if b"<!DOCTYPE" in xml or b"<!ENTITY" in xml:
        raise WebhookError("a document type is not accepted")
    try:
        parsed = XmlUtil.dict_from_xml(xml)
    except Exception:  # the SDK's minidom parser raises its own errors for bad XML
        raise WebhookError("bt_payload is not a notification") from None
    notification = parsed.get("notification") if isinstance(parsed, dict) else None
    if not isinstance(notification, dict):
        raise WebhookError("bt_payload is not a notification")
    return {"notification": _plain(notification)}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def parse_braintree(payload: dict[str, Any]) -> ProviderEvent:
    notification = required_field(payload, "notification", dict, "")
    kind = required_field(notification, "kind", str, "notification.")[:100]
    created = _time(required_field(notification, "timestamp", str, "notification."))
    subject = notification.get("subject")
    subject = subject if isinstance(subject, dict) else {}
    txn, dispute = subject.get("transaction"), subject.get("dispute")
    if isinstance(dispute, dict) and kind.startswith("dispute_"):
        return _dispute_event(kind, created, dispute)
    if isinstance(txn, dict) and kind in (SETTLED, SETTLEMENT_DECLINED):
        return _transaction_event(kind, created, txn)
    subject_id = _id_of(txn) or _id_of(dispute) or "-"
    return ProviderEvent(
        f"{kind}:{subject_id}:{created.isoformat()}"[:255], kind, created, None, None
    )


def _transaction_event(kind: str, created: datetime, txn: dict[str, Any]) -> ProviderEvent:
    txn_id = _required_id(txn, "transaction")
    event_id = f"{kind}:{txn_id}:{created.isoformat()}"
    report = _amount(transaction_report(txn), "subject.transaction")
    if txn.get("type") == "credit":  # our refund going back to the card
        return ProviderEvent(
            event_id,
            kind,
            created,
            "succeeded" if kind == SETTLED else "failed",
            txn_id,
            report,
            _code(txn),
            kind="refund",
            parent_payment_id=_id_of({"id": txn.get("refunded_transaction_id")}),
        )
    if kind == SETTLED:
        return ProviderEvent(event_id, kind, created, "succeeded", txn_id, report)
    # The sale's settlement was declined: its money never arrives. The charge's own story
    # (it failed), never a dispute: a sale that never took money loses nothing.
    return ProviderEvent(
        event_id, kind, created, "failed", txn_id, report, _code(txn), takes_back_success=True
    )


def _dispute_event(kind: str, created: datetime, dispute: dict[str, Any]) -> ProviderEvent:
    dispute_id = _required_id(dispute, "dispute")
    txn = dispute.get("transaction")
    txn = txn if isinstance(txn, dict) else {}
    is_inquiry = dispute.get("kind") == "retrieval"
    statuses = RETRIEVAL_STATUSES if is_inquiry else CHARGEBACK_STATUSES
    raw_status = _text(dispute.get("status")) or ""
    report = _amount(
        Report.of(amount_minor(dispute.get("amount_disputed")), dispute.get("currency_iso_code")),
        "subject.dispute",
    )
    facts = DisputeFacts(
        statuses.get(raw_status, raw_status)[:32],
        (_text(dispute.get("reason")) or "general")[:64],
        report.amount_minor,
        report.currency,
        _reply_by(dispute.get("reply_by_date")),
        is_inquiry=is_inquiry,
    )
    return ProviderEvent(
        f"{kind}:{dispute_id}:{created.isoformat()}"[:255],
        kind,
        created,
        None,
        dispute_id,
        Report(reference=_text(txn.get("order_id"))),
        kind="dispute",
        parent_payment_id=_id_of(txn),
        dispute=facts,
    )


def _time(raw: str) -> datetime:
    try:
        found = datetime.fromisoformat(raw)
    except ValueError:
        raise WebhookError("malformed field notification.timestamp") from None
    # Braintree writes UTC (`...Z`); the SDK's codec reads it into a naive datetime.
    found = found if found.tzinfo is not None else found.replace(tzinfo=UTC)
    return bounded_time(found, "notification.timestamp")


def _reply_by(raw: object) -> datetime | None:
    if not isinstance(raw, str):
        return None
    try:
        found = datetime.fromisoformat(raw)
    except ValueError:
        return None
    found = found if found.tzinfo is not None else found.replace(tzinfo=UTC)  # a date: UTC
    try:
        return bounded_time(found, "reply_by_date")
    except WebhookError:
        return None


def _required_id(obj: dict[str, Any], what: str) -> str:
    found = _id_of(obj)
    if found is None:
        raise WebhookError(f"missing or malformed field subject.{what}.id")
    return found


# Braintree's ids: short letters and digits (its transactions' are 8); an event id made
# of one, its kind and its time stays within its column.
BRAINTREE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _id_of(obj: object) -> str | None:
    found = obj.get("id") if isinstance(obj, dict) else None
    return found if isinstance(found, str) and BRAINTREE_ID.fullmatch(found) else None


def _amount(report: Report, field: str) -> Report:
    """A report whose amount and currency were given and readable; else WebhookError."""
    if report.amount_minor is None or report.amount_minor <= 0:
        raise WebhookError(f"missing or malformed field {field}.amount")
    if report.currency is None or not re.fullmatch(r"[A-Z]{3}", report.currency):
        raise WebhookError(f"missing or malformed field {field}.currency_iso_code")
    return report


def _text(value: object) -> str | None:
    return value[:255] if isinstance(value, str) and value else None


def _code(txn: dict[str, Any]) -> str | None:
    code = txn.get("processor_settlement_response_code") or txn.get("processor_response_code")
    return str(code)[:64] if code else None
