"""Smoke version of the chaos drill: every kind of fault once, invariants asserted.

It also plants the failures the drill exists to catch (a double charge, a charge
we have no record of), so a checker that cannot fail would fail here.
"""

from __future__ import annotations

import uuid

import requests
from braintree.util.xml_util import XmlUtil

from bench.drills import chaos
from bench.drills.stack import running_stack


def _charge_behind_our_back(
    sandbox_url: str, payment_ref: str, method: str = "pm_card_visa"
) -> None:
    """A succeeded charge at the provider that no payment of ours asked for."""
    response = requests.post(
        f"{sandbox_url}/v1/payment_intents",
        data={
            "amount": "1400",
            "currency": "eur",
            "confirm": "true",
            "automatic_payment_methods[enabled]": "true",
            "automatic_payment_methods[allow_redirects]": "never",
            "payment_method": method,
            "metadata[payment_id]": payment_ref,
        },
        headers={"Idempotency-Key": str(uuid.uuid4()), "Authorization": "Bearer sk_test_sandbox"},
        timeout=10,
    )
    assert response.status_code == 200, response.text


def test_chaos_drill_smoke(app: object) -> None:
    with running_stack(settings=chaos.SETTINGS) as stack:
        results = chaos.drill(
            stack, seed=20261130, operations=32, customers=4, fault_every_s=0.8, settle_s=90
        )
        assert {fault["fault"] for fault in results["faults"]} == set(chaos.FAULT_KINDS)
        assert results["payments"] > 0 and results["webhooks_delivered"] > 0
        assert results["violations"] == []
        assert results["double_charges"] == 0
        assert results["charged_by_provider"].get("braintree", 0) > 0  # both, same faults
        assert results["charged_by_provider"].get("stripe", 0) > 0
        assert results["settle_s"] is not None  # every payment final or needs_review
        assert "500" not in results["client_responses"], results["unhandled_errors"]
        assert results["three_ds_authenticated"] > 0  # customers passed 3-D Secure too
        assert results["refunds"] > 0 and results["provider_refunds"] > 0  # refunds under faults
        # Disputes under faults: every one at the provider recorded, and decided.
        assert results["disputes"] > 0 and results["disputes"] == results["provider_disputes"]
        assert results["disputes_decided"] > 0
        assert set(results["dispute_statuses"]) & {"won", "lost", "warning_closed"}
        # Its pictures: each fault marked on a timeline sampled through the outages.
        marks = {label for _, label in results["timeline"]["marks"]}
        assert set(chaos.FAULT_KINDS) <= marks
        assert results["timeline"]["series"]["pages"]["p99"]
        # The books over the days that passed at the provider: each day reconciled, the
        # payouts (one refused, paid again) booked, the planted discrepancies found.
        books = results["books"]
        assert len(books["days"]) == 4 and books["payouts"] >= 2, books
        assert sum("adjustment (fee)" in item for item in books["unmatched"]) == 1, books
        assert books["trial_balance"] == "trial balance: zero", books
        assert books["rebuild_check"].endswith(" 0 mismatches"), books

        first_payment = min(int(ref) for ref in _our_payment_refs(stack.sandbox_url, "stripe"))
        _charge_behind_our_back(stack.sandbox_url, str(first_payment))
        braintree_key = sorted(_our_payment_refs(stack.sandbox_url, "braintree"))[0]
        _sale_behind_our_back(stack.sandbox_url, braintree_key)
        _charge_behind_our_back(stack.sandbox_url, "987654321", "pm_card_createDispute")
        _refund_behind_our_back(stack.sandbox_url, "424242")
        planted = chaos.drill_invariants(stack)
    doubles = [v for v in planted if v.startswith("double charge")]
    assert any("'stripe'" in v for v in doubles) and any(braintree_key in v for v in doubles)
    assert any("987654321" in v for v in planted)
    assert any("'424242'" in v for v in planted)  # a refund we have no record of
    assert any(v.endswith("at the provider is not recorded") for v in planted)  # its dispute


def _refund_behind_our_back(sandbox_url: str, refund_ref: str) -> None:
    """A refund at the provider that no refund of ours asked for."""
    auth = {"Authorization": "Bearer sk_test_sandbox"}
    intents = requests.get(f"{sandbox_url}/v1/payment_intents", headers=auth, timeout=10).json()
    paid = next(i for i in intents["data"] if i["status"] == "succeeded")
    response = requests.post(
        f"{sandbox_url}/v1/refunds",
        data={"payment_intent": paid["id"], "amount": "1", "metadata[refund_id]": refund_ref},
        headers=auth,
        timeout=10,
    )
    assert response.status_code == 200, response.text


def _our_payment_refs(sandbox_url: str, dialect: str) -> set[str]:
    charges = requests.get(f"{sandbox_url}/_sandbox/charges", timeout=10).json()["data"]
    return {
        c["payment_ref"]
        for c in charges
        if c["status"] == "succeeded" and c["payment_ref"] and c["dialect"] == dialect
    }


def _sale_behind_our_back(sandbox_url: str, order_id: str) -> None:
    """A second Braintree sale for one of our payments (its key as the order id)."""
    sale = XmlUtil.xml_from_dict(
        {
            "transaction": {
                "type": "sale",
                "amount": "1.00",
                "payment_method_nonce": "fake-valid-discover-nonce",
                "order_id": order_id,
            }
        }
    )
    response = requests.post(
        f"{sandbox_url}/merchants/sandbox_merchant/transactions",
        data=sale.encode(),
        headers={"Content-Type": "application/xml", "X-ApiVersion": "6"},
        auth=("sandbox_public_key", "sandbox_private_key"),
        timeout=10,
    )
    assert response.status_code == 201, response.text
