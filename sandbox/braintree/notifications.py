"""Braintree's webhook notifications, as its gateway sends them: a form POST of
`bt_signature` and `bt_payload`, the payload the base64 (76-character lines) of the
notification's XML, the signature `<public key>|<hex HMAC-SHA1 of the payload, keyed
by the SHA-1 of the private key>`. Kinds sent here: `transaction_settled`,
`transaction_settlement_declined`, `dispute_opened`, `dispute_accepted`, `dispute_won`
and `dispute_lost`."""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import UTC, datetime
from typing import Any

from sandbox.braintree.objects import shown, shown_dispute
from sandbox.braintree.xml import render

# A transaction's status, and the notification its settlement sends.
SETTLEMENT_KINDS = {
    "settled": "transaction_settled",
    "settlement_declined": "transaction_settlement_declined",
}


def notification_xml(event: dict[str, Any]) -> bytes:
    """The notification of a recorded event ({"kind", "created", and its "transaction" or
    "dispute"})."""
    subject = (
        {"dispute": shown_dispute(event["dispute"])}
        if "dispute" in event
        else {"transaction": shown(event["transaction"])}
    )
    return render(
        "notification",
        {
            "timestamp": datetime.fromtimestamp(event["created"], UTC),
            "kind": event["kind"],
            "subject": subject,
        },
    )


def signed_form(public_key: str, private_key: str, xml: bytes) -> dict[str, str]:
    payload = base64.encodebytes(xml)
    digest = hmac.new(hashlib.sha1(private_key.encode()).digest(), payload, hashlib.sha1)
    return {"bt_signature": f"{public_key}|{digest.hexdigest()}", "bt_payload": payload.decode()}
