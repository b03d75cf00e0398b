"""After the sale, through Braintree's SDK: submitted for settlement, voided only before
it settles, refunded only once it settles (fully or in parts, never more), each refusal
with Braintree's code."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import braintree


def _sold(braintree_sdk: braintree.BraintreeGateway, amount: str, *, submit: bool = True) -> Any:
    result = braintree_sdk.transaction.sale(
        {
            "amount": amount,
            "payment_method_nonce": "fake-valid-nonce",
            "order_id": str(uuid.uuid4()),
            "options": {"submit_for_settlement": submit},
        }
    )
    assert result.is_success
    return result.transaction


def _code(result: Any) -> str:
    [error] = result.errors.deep_errors
    return str(error.code)


def test_an_authorized_sale_is_submitted_once(braintree_sdk: braintree.BraintreeGateway) -> None:
    sale = _sold(braintree_sdk, "12.00", submit=False)
    assert sale.status == "authorized"
    submitted = braintree_sdk.transaction.submit_for_settlement(sale.id)
    assert submitted.is_success and submitted.transaction.status == "submitted_for_settlement"
    again = braintree_sdk.transaction.submit_for_settlement(sale.id)
    assert not again.is_success and _code(again) == "91507"


def test_an_unsettled_sale_is_voided_not_refunded(
    braintree_sdk: braintree.BraintreeGateway, sandbox: Any
) -> None:
    sale = _sold(braintree_sdk, "13.00")
    refused = braintree_sdk.transaction.refund(sale.id)
    assert not refused.is_success and _code(refused) == "91506"
    voided = braintree_sdk.transaction.void(sale.id)
    assert voided.is_success and voided.transaction.status == "voided"
    settled = _sold(braintree_sdk, "13.50")
    sandbox.age_braintree(60)
    late = braintree_sdk.transaction.void(settled.id)
    assert not late.is_success and _code(late) == "91504"


def test_a_settled_sale_is_refunded_in_parts_never_past_its_amount(
    braintree_sdk: braintree.BraintreeGateway, sandbox: Any
) -> None:
    sale = _sold(braintree_sdk, "20.00")
    sandbox.age_braintree(60)
    part = braintree_sdk.transaction.refund(sale.id, {"amount": "5.00", "order_id": "refund-1"})
    assert part.is_success
    credit = part.transaction
    assert (credit.type, credit.amount, credit.status, credit.refunded_transaction_id) == (
        "credit",
        Decimal("5.00"),
        "submitted_for_settlement",
        sale.id,
    )
    assert credit.order_id == "refund-1"
    too_much = braintree_sdk.transaction.refund(sale.id, "15.01")
    assert not too_much.is_success and _code(too_much) == "91521"
    rest = braintree_sdk.transaction.refund(sale.id)
    assert rest.is_success and rest.transaction.amount == Decimal("15.00")
    assert set(braintree_sdk.transaction.find(sale.id).refund_ids) == {
        credit.id,
        rest.transaction.id,
    }
    done = braintree_sdk.transaction.refund(sale.id, "1.00")
    assert not done.is_success and _code(done) == "91512"
    sandbox.age_braintree(60)
    assert braintree_sdk.transaction.find(credit.id).status == "settled"  # a refund settles too
