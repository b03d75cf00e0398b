"""Reading the sandbox's balance as Stripe serves it, judged by Stripe's SDK: pages and
cursors, the `created`, `type`, `source` and `payout` filters, `expand[]=data.source`
(the charge names its PaymentIntent), payouts by status, and Stripe's errors."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests
import stripe

from tests.sandbox_support import sdk_charge

AUTH = {"Authorization": "Bearer sk_test_sandbox"}


def _charges(sdk: stripe.StripeClient, count: int) -> list[Any]:
    return [sdk_charge(sdk, 1000 + n, metadata={"payment_id": str(n)}) for n in range(count)]


def test_every_transaction_is_read_once_across_pages_newest_first(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    intents = _charges(sdk, 23)
    first = sdk.v1.balance_transactions.list(params={"limit": 10})
    assert len(first.data) == 10 and first.has_more
    assert first.data[0].source == intents[-1].latest_charge  # newest first
    every = list(
        sdk.v1.balance_transactions.list(params={"limit": 10, "type": "charge"}).auto_paging_iter()
    )
    assert sorted(str(t.source) for t in every) == sorted(str(i.latest_charge) for i in intents)
    assert len({t.id for t in every}) == 23


def test_the_filters_choose_by_created_type_and_source(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    [intent] = _charges(sdk, 1)
    sdk.v1.refunds.create(params={"payment_intent": intent.id, "amount": 100})
    sandbox.age_balance(86400)  # yesterday's
    [today] = _charges(sdk, 1)
    midnight = int(time.time()) - 3600
    recent = sdk.v1.balance_transactions.list(params={"created": {"gte": midnight}}).data
    assert [t.source for t in recent] == [today.latest_charge]
    refunds = sdk.v1.balance_transactions.list(params={"type": "refund"}).data
    assert [t.amount for t in refunds] == [-100]
    assert sdk.v1.balance_transactions.list(params={"source": "ch_unknown"}).data == []


def test_the_source_is_expanded_to_the_charge_that_names_its_payment_intent(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    [intent] = _charges(sdk, 1)
    refund = sdk.v1.refunds.create(params={"payment_intent": intent.id, "amount": 100})
    listed = sdk.v1.balance_transactions.list(params={"expand": ["data.source"]}).data
    by_type: dict[str, Any] = {t.type: t.source for t in listed}
    charge, refunded = by_type["charge"], by_type["refund"]
    assert (charge.object, charge.id, charge.payment_intent) == (
        "charge",
        intent.latest_charge,
        intent.id,
    )
    assert (refunded.object, refunded.id, refunded.payment_intent) == (
        "refund",
        refund.id,
        intent.id,
    )


def test_payouts_are_listed_by_status(sdk: stripe.StripeClient, sandbox: Any) -> None:
    _charges(sdk, 1)
    sandbox.age_balance(2 * 86400)
    [failed] = sandbox.pay_out(fail=True)
    [paid] = sandbox.pay_out()
    assert [p.id for p in sdk.v1.payouts.list(params={"status": "failed"}).data] == [failed["id"]]
    assert [p.id for p in sdk.v1.payouts.list().data] == [paid["id"], failed["id"]]


def test_what_stripe_refuses_is_refused_as_stripe_does(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    with pytest.raises(stripe.InvalidRequestError) as missing:
        sdk.v1.balance_transactions.retrieve("txn_nothing")
    assert (missing.value.http_status, missing.value.code) == (404, "resource_missing")
    with pytest.raises(stripe.InvalidRequestError):
        sdk.v1.payouts.retrieve("po_nothing")
    for params in ({"type": "bonus"}, {"created": {"after": "1"}}, {"limit": 101}):
        with pytest.raises(stripe.InvalidRequestError) as refused:
            sdk.v1.balance_transactions.list(params=params)  # type: ignore[arg-type]
        assert refused.value.http_status == 400
    with pytest.raises(stripe.InvalidRequestError):
        sdk.v1.payouts.list(params={"status": "lost"})
    unknown = requests.get(
        f"{sandbox.url}/v1/balance_transactions", params={"color": "red"}, headers=AUTH, timeout=5
    )
    assert unknown.status_code == 400
    assert unknown.json()["error"]["code"] == "parameter_unknown"


def test_the_balance_is_what_the_transactions_net_available_once_due(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    _charges(sdk, 2)  # 10.00 and 10.01, fees 0.40 each
    held = sdk.v1.balance.retrieve()
    assert [(f.amount, f.currency) for f in held.pending] == [(2001 - 80, "eur")]
    assert [(f.amount, f.currency) for f in held.available] == [(0, "eur")]
    sandbox.age_balance(2 * 86400)
    assert [f.amount for f in sdk.v1.balance.retrieve().available] == [2001 - 80]


def test_a_payout_asked_for_by_hand_lists_no_contents_as_stripe_does(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    _charges(sdk, 1)
    with pytest.raises(stripe.InvalidRequestError) as short:  # nothing available yet
        sdk.v1.payouts.create(params={"amount": 500, "currency": "eur"})
    assert short.value.code == "balance_insufficient"
    sandbox.age_balance(2 * 86400)
    manual = sdk.v1.payouts.create(params={"amount": 500, "currency": "eur"})
    assert (manual.automatic, manual.amount, manual.status) == (False, 500, "paid")
    assert [f.amount for f in sdk.v1.balance.retrieve().available] == [1000 - 40 - 500]
    with pytest.raises(stripe.InvalidRequestError) as listed:
        sdk.v1.balance_transactions.list(params={"payout": manual.id})
    assert "only be filtered on automatic transfers" in str(listed.value.user_message)
