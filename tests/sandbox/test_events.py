"""Sandbox webhooks: signed like the provider's, redelivered, duplicated, dropped, reordered."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import requests

from tests.sandbox_support import AUTH, create, wait_for


def test_webhooks_are_signed_like_stripe(sandbox: Any, webhook_receiver: Any) -> None:
    intent = create(sandbox, "key-5").json()

    def ours() -> list[Any]:
        # Only this intent's event: one of an earlier test, already on its way when the
        # sandbox was reset, may still land after the receiver was cleared.
        return [d for d in webhook_receiver.deliveries if intent["id"].encode() in d.body]

    wait_for(ours)
    delivery = ours()[0]
    assert delivery.path == "/hooks/stripe"
    assert delivery.json["type"] == "payment_intent.succeeded"
    assert delivery.json["data"]["object"]["id"] == intent["id"]
    parts = dict(p.split("=", 1) for p in delivery.headers["Stripe-Signature"].split(","))
    expected = hmac.new(
        b"whsec_sandbox", f"{parts['t']}.".encode() + delivery.body, hashlib.sha256
    ).hexdigest()
    assert hmac.compare_digest(parts["v1"], expected)


def test_failed_deliveries_are_retried(sandbox: Any, webhook_receiver: Any) -> None:
    webhook_receiver.fail_next = 1
    create(sandbox, "key-6")
    wait_for(lambda: webhook_receiver.deliveries, timeout_s=5)
    # The sandbox counts the attempt after the receiver answered: wait for its commit.
    wait_for(lambda: sandbox.events()[0]["attempts"] == 2)


def test_duplicated_webhooks(sandbox: Any, webhook_receiver: Any) -> None:
    sandbox.add_fault("webhook_duplicate", copies=3)
    create(sandbox, "key-7")
    wait_for(lambda: len(webhook_receiver.deliveries) == 3)
    assert len({d.json["id"] for d in webhook_receiver.deliveries}) == 1


def test_dropped_webhooks_are_listed_as_undelivered(sandbox: Any, webhook_receiver: Any) -> None:
    sandbox.add_fault("webhook_drop", count=1)
    dropped = create(sandbox, "key-8").json()
    create(sandbox, "key-9", **{"metadata[payment_id]": "10"})
    wait_for(lambda: len(webhook_receiver.deliveries) == 1)
    undelivered = requests.get(
        f"{sandbox.url}/v1/events", params={"delivery_success": "false"}, headers=AUTH, timeout=5
    ).json()["data"]
    assert [e["data"]["object"]["id"] for e in undelivered] == [dropped["id"]]


def test_reordered_webhooks_arrive_out_of_order(sandbox: Any, webhook_receiver: Any) -> None:
    sandbox.add_fault("webhook_delay", seconds=0.8, count=1)
    first = create(sandbox, "key-10").json()
    second = create(sandbox, "key-11", **{"metadata[payment_id]": "11"}).json()
    wait_for(lambda: len(webhook_receiver.deliveries) == 2)
    order = [d.json["data"]["object"]["id"] for d in webhook_receiver.deliveries]
    assert order == [second["id"], first["id"]]
