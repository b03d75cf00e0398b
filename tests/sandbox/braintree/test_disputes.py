"""Braintree's disputes in the sandbox, through Braintree's SDK: opened on a settled sale
by the cardholder's bank, accepted (lost), or fought with evidence and won or lost;
each change notified, signed, and read by the SDK; found by the day a change took effect."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs

import braintree
import pytest
import requests

from tests.sandbox_support import wait_for


def _settled_sale(braintree_sdk: braintree.BraintreeGateway, sandbox: Any) -> Any:
    sale = braintree_sdk.transaction.sale(
        {
            "amount": "30.00",
            "payment_method_nonce": "fake-valid-nonce",
            "order_id": str(uuid.uuid4()),
            "options": {"submit_for_settlement": True},
        }
    ).transaction
    sandbox.age_braintree(60)
    assert braintree_sdk.transaction.find(sale.id).status == "settled"
    return sale


def _kinds(
    braintree_sdk: braintree.BraintreeGateway, webhook_receiver: Any, count: int
) -> list[Any]:
    def notified() -> list[Any]:
        return [d for d in webhook_receiver.deliveries if d.path == "/hooks/braintree"]

    wait_for(lambda: len(notified()) >= count, timeout_s=10)
    forms = [parse_qs(d.body.decode()) for d in notified()]
    return [
        braintree_sdk.webhook_notification.parse(f["bt_signature"][0], f["bt_payload"][0])
        for f in forms
    ]


@pytest.mark.parametrize(
    ("evidence", "status", "kind", "won"),
    [
        ("compelling_evidence", "won", "dispute_won", Decimal("30.00")),
        ("we shipped it", "lost", "dispute_lost", Decimal("0.00")),
    ],
)
def test_a_dispute_fought_with_evidence_is_won_or_lost_and_notified(
    braintree_sdk: braintree.BraintreeGateway,
    sandbox: Any,
    webhook_receiver: Any,
    evidence: str,
    status: str,
    kind: str,
    won: Decimal,
) -> None:
    sale = _settled_sale(braintree_sdk, sandbox)
    opened = sandbox.braintree_dispute(sale.id)
    dispute = braintree_sdk.dispute.find(opened["id"])
    assert (dispute.status, dispute.kind, dispute.amount_disputed, dispute.transaction.id) == (
        "open",
        "chargeback",
        Decimal("30.00"),
        sale.id,
    )
    assert braintree_sdk.dispute.add_text_evidence(dispute.id, evidence).is_success
    assert braintree_sdk.dispute.finalize(dispute.id).is_success
    decided = braintree_sdk.dispute.find(dispute.id)
    assert (decided.status, decided.amount_won) == (status, won)
    notifications = _kinds(braintree_sdk, webhook_receiver, 3)
    assert [n.kind for n in notifications] == ["transaction_settled", "dispute_opened", kind]
    assert notifications[-1].dispute.id == dispute.id
    assert notifications[-1].dispute.transaction_details.id == sale.id


def test_a_dispute_accepted_is_lost_and_cannot_be_fought_after(
    braintree_sdk: braintree.BraintreeGateway, sandbox: Any, webhook_receiver: Any
) -> None:
    sale = _settled_sale(braintree_sdk, sandbox)
    dispute_id = sandbox.braintree_dispute(sale.id)["id"]
    assert braintree_sdk.dispute.accept(dispute_id).is_success
    assert braintree_sdk.dispute.find(dispute_id).status == "accepted"
    assert not braintree_sdk.dispute.finalize(dispute_id).is_success
    assert _kinds(braintree_sdk, webhook_receiver, 3)[-1].kind == "dispute_accepted"


def test_only_a_settled_sale_can_be_disputed(
    braintree_sdk: braintree.BraintreeGateway, sandbox: Any
) -> None:
    unsettled = braintree_sdk.transaction.sale(
        {"amount": "31.00", "payment_method_nonce": "fake-valid-nonce"}
    ).transaction
    answer = requests.post(
        f"{sandbox.url}/_sandbox/braintree/disputes",
        json={"transaction_id": unsettled.id},
        timeout=5,
    )
    assert answer.status_code == 404
    with pytest.raises(braintree.exceptions.NotFoundError):
        braintree_sdk.dispute.find("nosuchdispute")


def test_disputes_are_found_by_the_day_a_change_of_theirs_took_effect(
    braintree_sdk: braintree.BraintreeGateway, sandbox: Any
) -> None:
    opened = [sandbox.braintree_dispute(_settled_sale(braintree_sdk, sandbox).id)["id"]]
    opened += [sandbox.braintree_dispute(_settled_sale(braintree_sdk, sandbox).id)["id"]]
    today = datetime.now(UTC).date()
    effective = braintree.DisputeSearch.effective_date
    found = braintree_sdk.dispute.search(effective.between(today, today)).disputes
    disputes = list(found.items)
    assert sorted(d.id for d in disputes) == sorted(opened)
    assert {h.effective_date for d in disputes for h in d.status_history} == {today}
    yesterday = today - timedelta(days=1)
    assert (
        list(braintree_sdk.dispute.search(effective.between(yesterday, yesterday)).disputes.items)
        == []
    )
    refused = requests.post(
        f"{sandbox.url}/merchants/sandbox_merchant/disputes/advanced_search?page=0",
        data="<search/>",
        headers={"Content-Type": "application/xml"},
        auth=("sandbox_public_key", "sandbox_private_key"),
        timeout=5,
    )
    assert refused.status_code == 422
