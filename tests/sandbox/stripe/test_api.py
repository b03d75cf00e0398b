"""Stripe's own SDK is the judge: it drives the sandbox through the calls the product
makes and the ones a real integration meets, and must find nothing un-Stripe-like."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
import requests
import stripe

from tests.sandbox_support import FORM, wait_for

CARD = {"automatic_payment_methods": {"enabled": True, "allow_redirects": "never"}}


def _create(sdk: stripe.StripeClient, key: str | None = None, **params: Any) -> Any:
    fields: Any = {"amount": 1000, "currency": "eur", **CARD, **params}
    options: Any = {"idempotency_key": key} if key else {}
    return sdk.v1.payment_intents.create(params=fields, options=options)


def test_create_then_confirm(sdk: stripe.StripeClient, sandbox: Any) -> None:
    created = _create(sdk, payment_method="pm_card_visa", metadata={"payment_id": "41"})
    assert created.status == "requires_confirmation" and created.amount_received == 0
    confirmed = sdk.v1.payment_intents.confirm(created.id)
    assert confirmed.status == "succeeded" and confirmed.amount_received == 1000
    assert str(confirmed.latest_charge).startswith("ch_")
    assert sandbox.succeeded_charges("41") == 1


def test_a_replay_returns_the_same_intent_and_charges_once(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    key = str(uuid.uuid4())
    first = _create(
        sdk, key, confirm=True, payment_method="pm_card_visa", metadata={"payment_id": "7"}
    )
    again = _create(
        sdk, key, confirm=True, payment_method="pm_card_visa", metadata={"payment_id": "7"}
    )
    assert again.id == first.id
    assert again.last_response.headers["Idempotent-Replayed"] == "true"
    assert sandbox.succeeded_charges("7") == 1


def test_a_key_reused_with_other_parameters_is_an_idempotency_error(
    sdk: stripe.StripeClient,
) -> None:
    key = str(uuid.uuid4())
    _create(sdk, key, confirm=True, payment_method="pm_card_visa")
    with pytest.raises(stripe.IdempotencyError):
        _create(sdk, key, confirm=True, payment_method="pm_card_visa", amount=1001)


def test_a_decline_carries_its_decline_code(sdk: stripe.StripeClient) -> None:
    with pytest.raises(stripe.CardError) as raised:
        _create(sdk, confirm=True, payment_method="pm_card_chargeDeclinedInsufficientFunds")
    error = raised.value.error
    assert raised.value.http_status == 402 and error is not None
    assert error.code == "card_declined" and error.decline_code == "insufficient_funds"
    assert error.payment_intent is not None
    assert error.payment_intent.status == "requires_payment_method"
    last_error = error.payment_intent.last_payment_error
    assert last_error is not None and last_error.decline_code == "insufficient_funds"
    assert error.doc_url and error.request_log_url


def test_retrieve_and_a_missing_intent(sdk: stripe.StripeClient) -> None:
    created = _create(sdk)
    assert sdk.v1.payment_intents.retrieve(created.id).id == created.id
    with pytest.raises(stripe.InvalidRequestError) as raised:
        sdk.v1.payment_intents.retrieve("pi_missing")
    assert raised.value.http_status == 404 and raised.value.code == "resource_missing"


def test_list_auto_paginates_over_250_intents_newest_first(sdk: stripe.StripeClient) -> None:
    created = [_create(sdk, amount=100 + n).id for n in range(250)]
    first_page = sdk.v1.payment_intents.list(params={"limit": 100})
    assert len(first_page.data) == 100 and first_page.has_more
    seen = [intent.id for intent in first_page.auto_paging_iter()]
    assert seen == list(reversed(created))
    default = sdk.v1.payment_intents.list()
    assert len(default.data) == 10  # Stripe's default page size


def test_search_understands_stripes_query_language_and_pages(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    sandbox.add_fault("search_lag", seconds=0)  # the index has caught up
    ours = [_create(sdk, metadata={"order_id": "A-1"}, amount=500 + n).id for n in range(5)]
    _create(sdk, metadata={"order_id": "B-2"})
    result = sdk.v1.payment_intents.search(
        params={"query": "metadata['order_id']:'A-1'", "limit": 2}
    )
    assert len(result.data) == 2 and result.has_more and result.next_page
    assert sorted(i.id for i in result.auto_paging_iter()) == sorted(ours)
    both = sdk.v1.payment_intents.search(
        params={"query": "metadata['order_id']:'A-1' AND amount>502"}
    )
    assert len(both.data) == 2
    with pytest.raises(stripe.InvalidRequestError):
        sdk.v1.payment_intents.search(params={"query": "amount:1 AND status:'x' OR amount:2"})


def test_search_lags_behind_and_lists_do_not(sdk: stripe.StripeClient, sandbox: Any) -> None:
    # Stripe: search "is not suitable for read-after-write"; lists are.
    created = _create(sdk, metadata={"payment_id": "lagging"})
    query: Any = {"query": "metadata['payment_id']:'lagging'"}
    assert sdk.v1.payment_intents.search(params=query).data == []  # the default lag
    now = int(time.time())
    listed = sdk.v1.payment_intents.list(params={"created": {"gte": now - 60, "lte": now + 60}})
    assert [i.id for i in listed.data] == [created.id]
    sandbox.add_fault("search_lag", seconds=0)  # the index catches up
    assert [i.id for i in sdk.v1.payment_intents.search(params=query).data] == [created.id]


def test_expanding_the_payment_method_shows_the_card_but_never_its_number(
    sdk: stripe.StripeClient,
) -> None:
    options: Any = {**CARD, "expand": ["payment_method"]}
    created = _create(sdk, confirm=True, payment_method="pm_card_visa", **options)
    card: Any = created.payment_method.card
    assert (card.brand, card.last4) == ("visa", "4242")
    method = sdk.v1.payment_methods.create(
        params={
            "type": "card",
            "card": {"number": "5555555555554444", "exp_month": 12, "exp_year": 2034, "cvc": "123"},
        }
    )
    plain: Any = CARD
    intent = _create(sdk, confirm=True, payment_method=method.id, **plain)
    assert isinstance(intent.payment_method, str)  # not expanded: the id
    again: Any = sdk.v1.payment_intents.retrieve(intent.id, params={"expand": ["payment_method"]})
    shown = again.payment_method.card
    assert (shown.brand, shown.last4) == ("mastercard", "4444") and "number" not in shown


def test_lists_filter_on_creation_time(sdk: stripe.StripeClient) -> None:
    created = _create(sdk)
    now = int(time.time())
    assert sdk.v1.payment_intents.list(params={"created": {"lt": now - 60}}).data == []
    exact = sdk.v1.payment_intents.list(params={"created": created.created})
    assert [i.id for i in exact.data] == [created.id]
    with pytest.raises(stripe.InvalidRequestError, match="created"):
        sdk.v1.payment_intents.list(params={"created": {"after": now}})  # type: ignore[arg-type]  # a parameter Stripe refuses, sent on purpose
    with pytest.raises(stripe.InvalidRequestError, match="timestamp"):
        sdk.v1.payment_intents.list(params={"created": {"gte": "yesterday"}})  # type: ignore[arg-type]  # a parameter Stripe refuses, sent on purpose


def test_undelivered_events_across_pages(sdk: stripe.StripeClient, sandbox: Any) -> None:
    sandbox.add_fault("webhook_drop")
    for n in range(25):
        _create(sdk, confirm=True, payment_method="pm_card_visa", metadata={"payment_id": str(n)})
    page = sdk.v1.events.list(params={"delivery_success": False, "limit": 10})
    assert len(page.data) == 10 and page.has_more
    events = list(page.auto_paging_iter())
    assert len(events) == 25 and len({e.id for e in events}) == 25
    assert all(e.type == "payment_intent.succeeded" and e.pending_webhooks == 0 for e in events)
    one: Any = sdk.v1.events.retrieve(events[0].id)
    assert one.data.object.object == "payment_intent" and one.request.id.startswith("req_")
    typed = sdk.v1.events.list(params={"type": "payment_intent.*", "limit": 100})
    assert len(typed.data) == 25


def test_manual_capture_and_cancel(sdk: stripe.StripeClient, sandbox: Any) -> None:
    held = _create(
        sdk,
        confirm=True,
        capture_method="manual",
        payment_method="pm_card_visa",
        metadata={"payment_id": "55"},
    )
    assert held.status == "requires_capture" and held.amount_capturable == 1000
    assert sandbox.succeeded_charges("55") == 0  # authorized, not yet charged
    captured = sdk.v1.payment_intents.capture(held.id, params={"amount_to_capture": 600})
    assert captured.status == "succeeded" and captured.amount_received == 600
    assert sandbox.succeeded_charges("55") == 1
    open_intent = _create(sdk)
    canceled = sdk.v1.payment_intents.cancel(
        open_intent.id, params={"cancellation_reason": "abandoned"}
    )
    assert canceled.status == "canceled" and canceled.canceled_at
    with pytest.raises(stripe.InvalidRequestError) as raised:
        sdk.v1.payment_intents.cancel(captured.id)
    assert raised.value.code == "payment_intent_unexpected_state"


def test_update_merges_metadata(sdk: stripe.StripeClient) -> None:
    created = _create(sdk, metadata={"a": "1", "b": "2"})
    updated = sdk.v1.payment_intents.update(
        created.id, params={"metadata": {"b": "", "c": "3"}, "description": "mug"}
    )
    assert updated.metadata.to_dict() == {"a": "1", "c": "3"}
    assert updated.description == "mug"


@pytest.mark.parametrize(
    "fault",
    [{"kind": "error", "status": 503}, {"kind": "error", "status": 429}, {"kind": "reset_before"}],
    ids=["503", "429", "reset"],
)
def test_sdk_network_retries_charge_once(
    sdk: stripe.StripeClient, sandbox: Any, fault: dict[str, Any]
) -> None:
    sandbox.add_fault(count=1, dialect="stripe", endpoint="create", **fault)
    intent = _create(sdk, confirm=True, payment_method="pm_card_visa", metadata={"payment_id": "9"})
    assert intent.status == "succeeded"
    creates = sandbox.requests_log(endpoint="create")
    assert len(creates) == 2 and len({r["idempotency_key"] for r in creates}) == 1
    assert sandbox.succeeded_charges("9") == 1


def test_a_stored_500_tells_the_sdk_not_to_retry(sdk: stripe.StripeClient, sandbox: Any) -> None:
    sandbox.add_fault("error", status=500, count=1, dialect="stripe", endpoint="create")
    with pytest.raises(stripe.APIError):
        _create(sdk, str(uuid.uuid4()), confirm=True, payment_method="pm_card_visa")
    assert len(sandbox.requests_log(endpoint="create")) == 2  # the first, one replay, no more


def test_construct_event_accepts_real_sandbox_deliveries(
    sdk: stripe.StripeClient, webhook_receiver: Any
) -> None:
    intent = _create(sdk, confirm=True, payment_method="pm_card_visa")
    wait_for(lambda: webhook_receiver.deliveries)
    delivery = webhook_receiver.deliveries[0]
    event = stripe.Webhook.construct_event(
        delivery.body, delivery.headers["Stripe-Signature"], "whsec_sandbox"
    )
    assert event.type == "payment_intent.succeeded" and event.data.object.id == intent.id
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.Webhook.construct_event(
            delivery.body + b" ", delivery.headers["Stripe-Signature"], "whsec_sandbox"
        )


def test_unknown_parameters_routes_and_request_ids(sdk: stripe.StripeClient, sandbox: Any) -> None:
    with pytest.raises(stripe.InvalidRequestError) as raised:
        _create(sdk, capture="yes")
    assert raised.value.code == "parameter_unknown" and raised.value.param == "capture"
    auth = {"Authorization": "Bearer sk_test_sandbox"}
    for method, path in (("GET", "/v1/charges/ch_1"), ("DELETE", "/v1/payment_intents")):
        answer = requests.request(method, f"{sandbox.url}{path}", headers=auth, timeout=5)
        assert answer.status_code == 404 and answer.headers["Content-Type"] == "application/json"
        assert answer.json()["error"]["code"] == "resource_missing"
        assert answer.headers["Request-Id"].startswith("req_")
    started = time.monotonic()
    ok = requests.get(f"{sandbox.url}/v1/payment_intents", headers=auth, timeout=5)
    assert ok.headers["Request-Id"].startswith("req_") and time.monotonic() - started < 5


def test_api_key_is_required(sandbox: Any) -> None:
    response = requests.post(f"{sandbox.url}/v1/payment_intents", data=FORM, timeout=5)
    assert response.status_code == 401
    sale = f"{sandbox.url}/merchants/sandbox_merchant/transactions"
    assert requests.post(sale, data=b"<transaction/>", timeout=5).status_code == 401
    assert sandbox.charges()["data"] == []


def test_an_amount_under_the_currencys_minimum_is_refused(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    with pytest.raises(stripe.InvalidRequestError) as refused:
        _create(sdk, amount=29, currency="gbp")
    assert refused.value.code == "amount_too_small" and refused.value.param == "amount"
    assert _create(sdk, amount=30, currency="gbp").amount == 30  # the minimum itself
    assert _create(sdk, amount=50, currency="jpy").amount == 50  # zero-decimal: 50 yen
