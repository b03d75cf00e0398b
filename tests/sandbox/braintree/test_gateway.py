"""The sandbox's Braintree gateway, judged by Braintree's own SDK (`braintree` on PyPI)
pointed at it over plain HTTP: sales decided by the published test nonces and amounts,
duplicate checking, find, search by order id (and its lag) or by the time of creation,
settlement later and its disbursement details."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import urlparse

import braintree
import pytest
import requests


def _sale(braintree_sdk: braintree.BraintreeGateway, amount: str, **more: Any) -> Any:
    return braintree_sdk.transaction.sale(
        {
            "amount": amount,
            "payment_method_nonce": more.pop("nonce", "fake-valid-nonce"),
            "order_id": more.pop("order_id", str(uuid.uuid4())),
            "options": {"submit_for_settlement": True},
            **more,
        }
    )


def test_a_sale_is_submitted_and_settles_later(
    braintree_sdk: braintree.BraintreeGateway, sandbox: Any
) -> None:
    result = _sale(braintree_sdk, "14.00", order_id="payment-7")
    assert result.is_success
    txn = result.transaction
    assert (txn.status, txn.amount, txn.order_id, txn.currency_iso_code, txn.type) == (
        "submitted_for_settlement",
        Decimal("14.00"),
        "payment-7",
        "EUR",
        "sale",
    )
    assert (txn.credit_card_details.last_4, txn.credit_card_details.card_type) == ("1111", "Visa")
    assert [e.status for e in txn.status_history] == ["authorized", "submitted_for_settlement"]
    assert braintree_sdk.transaction.find(txn.id).status == "submitted_for_settlement"
    sandbox.age_braintree(60)
    settled = braintree_sdk.transaction.find(txn.id)
    assert settled.status == "settled"
    assert [e.status for e in settled.status_history][-2:] == ["settling", "settled"]


@pytest.mark.parametrize(
    ("amount", "nonce", "status", "code", "text"),
    [
        ("2000.00", "fake-valid-nonce", "processor_declined", "2000", "Do Not Honor"),
        ("2001.00", "fake-valid-nonce", "processor_declined", "2001", "Insufficient Funds"),
        ("10.00", "fake-processor-declined-visa-nonce", "processor_declined", "2000", None),
        ("3000.00", "fake-valid-nonce", "failed", "3000", None),
    ],
)
def test_the_published_test_values_decline(
    braintree_sdk: braintree.BraintreeGateway,
    amount: str,
    nonce: str,
    status: str,
    code: str,
    text: str | None,
) -> None:
    result = _sale(braintree_sdk, amount, nonce=nonce)
    assert not result.is_success
    assert (result.transaction.status, result.transaction.processor_response_code) == (
        status,
        code,
    )
    if text is not None:
        assert result.message == text == result.transaction.processor_response_text


def test_a_repeat_within_the_window_is_rejected_as_a_duplicate_and_charges_once(
    braintree_sdk: braintree.BraintreeGateway, sandbox: Any
) -> None:
    """No idempotency key: a repeat after a cut connection is refused, not charged."""
    first = _sale(braintree_sdk, "21.00", order_id="payment-9")
    again = _sale(braintree_sdk, "21.00", order_id="payment-9")
    assert first.is_success and not again.is_success
    assert again.transaction.status == "gateway_rejected"
    assert again.transaction.gateway_rejection_reason == "duplicate"
    assert _sale(braintree_sdk, "21.01").is_success  # another amount is another sale
    sandbox.age_braintree(31)  # past the window: the same sale again is a new one
    assert _sale(braintree_sdk, "21.00").is_success
    assert sandbox.succeeded_charges("payment-9") == 1


def test_application_incomplete_is_a_gateway_rejection(
    braintree_sdk: braintree.BraintreeGateway,
) -> None:
    result = _sale(braintree_sdk, "5001.00")
    assert (result.transaction.status, result.transaction.gateway_rejection_reason) == (
        "gateway_rejected",
        "application_incomplete",
    )


def test_a_search_by_order_id_finds_the_sale_once_the_index_has_it(
    braintree_sdk: braintree.BraintreeGateway, sandbox: Any
) -> None:
    made = _sale(braintree_sdk, "15.00", order_id="payment-11").transaction
    lagging = braintree_sdk.transaction.search(braintree.TransactionSearch.order_id == "payment-11")
    assert lagging.ids == []  # younger than the search lag: not proof of absence
    sandbox.age_braintree(5)
    found = braintree_sdk.transaction.search(braintree.TransactionSearch.order_id == "payment-11")
    assert [t.id for t in found.items] == [made.id]
    assert [t.order_id for t in found.items] == ["payment-11"]


def test_a_search_by_creation_time_finds_what_was_made_then_and_a_settled_sale_is_disbursed(
    braintree_sdk: braintree.BraintreeGateway, sandbox: Any
) -> None:
    before = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)
    made = [_sale(braintree_sdk, amount).transaction.id for amount in ("16.00", "17.00")]
    sandbox.age_braintree(30)
    search = braintree.TransactionSearch.created_at
    earlier = before - timedelta(seconds=30)
    found = braintree_sdk.transaction.search(search.between(earlier, earlier + timedelta(hours=1)))
    assert sorted(found.ids) == sorted(made)
    hours_before = search.between(earlier - timedelta(hours=2), earlier - timedelta(hours=1))
    assert braintree_sdk.transaction.search(hours_before).ids == []
    settled = braintree_sdk.transaction.find(made[0])
    assert settled.status == "settled"
    details = settled.disbursement_details
    assert (details.settlement_amount, details.funds_held) == (Decimal("16.00"), False)
    assert details.disbursement_date in {datetime.now(UTC).date(), before.date()}  # settled day


def test_a_bad_request_gets_braintrees_validation_errors(
    braintree_sdk: braintree.BraintreeGateway,
) -> None:
    unknown = _sale(braintree_sdk, "10.00", nonce="not-a-nonce")
    assert not unknown.is_success and unknown.transaction is None
    [error] = unknown.errors.for_object("transaction").on("payment_method_nonce")
    assert error.code == "91565"
    bad = _sale(braintree_sdk, "10.001")
    assert bad.errors.for_object("transaction").on("amount")[0].code == "81503"


def test_wrong_keys_and_an_unknown_transaction_raise_the_sdks_errors(
    braintree_sdk: braintree.BraintreeGateway, sandbox: Any
) -> None:
    with pytest.raises(braintree.exceptions.NotFoundError):
        braintree_sdk.transaction.find("nosuchid")
    address = urlparse(sandbox.url)
    local = braintree.Environment("l", address.hostname, str(address.port), "", False, None)
    stranger = braintree.BraintreeGateway(
        braintree.Configuration(
            local, merchant_id="sandbox_merchant", public_key="x", private_key="y"
        )
    )
    with pytest.raises(braintree.exceptions.AuthenticationError):
        _sale(stranger, "10.00")


def test_a_sale_whose_answer_was_cut_is_rejected_as_a_duplicate_when_sent_again(
    braintree_sdk: braintree.BraintreeGateway, sandbox: Any
) -> None:
    """The connection cut after the sale went through: the client cannot know; sending it
    again is refused as a duplicate (never "the first one failed"), and the search by its
    order id finds the one that was made, once the index has it."""
    sandbox.add_fault("reset_after", dialect="braintree", endpoint="sale", count=1)
    with pytest.raises(requests.exceptions.ConnectionError):  # (the SDK's default: unwrapped)
        _sale(braintree_sdk, "17.00", order_id="payment-13")
    again = _sale(braintree_sdk, "17.00", order_id="payment-13")
    assert (again.transaction.status, again.transaction.gateway_rejection_reason) == (
        "gateway_rejected",
        "duplicate",
    )
    assert sandbox.succeeded_charges("payment-13") == 1
    sandbox.age_braintree(5)
    found = braintree_sdk.transaction.search(braintree.TransactionSearch.order_id == "payment-13")
    assert [t.status for t in found.items] == ["submitted_for_settlement", "gateway_rejected"]


def test_a_hang_and_a_500_are_what_the_sdk_sees(
    braintree_sdk: braintree.BraintreeGateway, sandbox: Any
) -> None:
    sandbox.add_fault("error", dialect="braintree", endpoint="find", status=503, count=1)
    with pytest.raises(braintree.exceptions.ServiceUnavailableError):
        braintree_sdk.transaction.find("abcdefgh")
    sandbox.add_fault("error", dialect="braintree", endpoint="sale", status=500, count=1)
    with pytest.raises(braintree.exceptions.ServerError):
        _sale(braintree_sdk, "18.00", order_id="payment-15")
    assert sandbox.succeeded_charges("payment-15") == 0  # refused before it was processed
