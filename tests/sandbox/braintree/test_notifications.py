"""Braintree's webhook notifications from the sandbox, read by Braintree's own SDK: a
sale's settlement (or its decline) is POSTed signed as Braintree signs them, and a
payload changed on the way is refused by the SDK."""

from __future__ import annotations

import base64
import uuid
from typing import Any
from urllib.parse import parse_qs

import braintree
import pytest

from tests.sandbox_support import wait_for


def _notified(webhook_receiver: Any, count: int, about: str) -> list[dict[str, str]]:
    """The Braintree notifications about transaction `about` (its id in the payload's
    XML): a late one of an earlier test's sale, settled by the shared sandbox's clock
    around its reset, is not this test's."""

    def braintrees() -> list[Any]:
        return [
            d
            for d in webhook_receiver.deliveries
            if d.path == "/hooks/braintree"
            and f"<id>{about}</id>".encode()
            in base64.b64decode(parse_qs(d.body.decode())["bt_payload"][0])
        ]

    wait_for(lambda: len(braintrees()) >= count, timeout_s=10)
    forms = [parse_qs(d.body.decode()) for d in braintrees()]
    assert all(
        d.headers.get("Content-Type") == "application/x-www-form-urlencoded" for d in braintrees()
    )
    return [{key: values[0] for key, values in form.items()} for form in forms]


@pytest.mark.parametrize(
    ("amount", "kind", "status"),
    [
        ("14.00", "transaction_settled", "settled"),
        ("4001.00", "transaction_settlement_declined", "settlement_declined"),
    ],
)
def test_a_settlement_is_notified_and_braintrees_sdk_reads_it(
    braintree_sdk: braintree.BraintreeGateway,
    sandbox: Any,
    webhook_receiver: Any,
    amount: str,
    kind: str,
    status: str,
) -> None:
    sale = braintree_sdk.transaction.sale(
        {
            "amount": amount,
            "payment_method_nonce": "fake-valid-nonce",
            "order_id": str(uuid.uuid4()),
            "options": {"submit_for_settlement": True},
        }
    ).transaction
    sandbox.age_braintree(60)  # nobody reads it: the sandbox settles it by itself
    [form] = _notified(webhook_receiver, 1, sale.id)
    notification = braintree_sdk.webhook_notification.parse(
        form["bt_signature"], form["bt_payload"]
    )
    assert notification.kind == kind
    assert (notification.transaction.id, notification.transaction.status) == (sale.id, status)
    assert notification.transaction.amount == sale.amount


def test_a_notification_changed_on_the_way_is_refused(
    braintree_sdk: braintree.BraintreeGateway, sandbox: Any, webhook_receiver: Any
) -> None:
    sale = braintree_sdk.transaction.sale(
        {
            "amount": "15.00",
            "payment_method_nonce": "fake-valid-nonce",
            "options": {"submit_for_settlement": True},
        }
    ).transaction
    sandbox.age_braintree(60)
    [form] = _notified(webhook_receiver, 1, sale.id)
    xml = base64.b64decode(form["bt_payload"]).replace(b"15.00", b"1500.00")
    forged = base64.encodebytes(xml).decode()
    with pytest.raises(braintree.exceptions.InvalidSignatureError):
        braintree_sdk.webhook_notification.parse(form["bt_signature"], forged)
    with pytest.raises(braintree.exceptions.InvalidSignatureError):
        braintree_sdk.webhook_notification.parse(
            "other_public_key|" + form["bt_signature"].split("|")[1], form["bt_payload"]
        )
