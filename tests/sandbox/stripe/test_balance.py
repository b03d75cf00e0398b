"""The sandbox's balance, judged by Stripe's SDK: a charge's balance transaction less
Stripe's EEA fee (1.5% + 0.25), a refund that keeps the fee, a refund that fails and
comes back, a chargeback with its dispute fee and its reinstatement, payouts of the
available balance (and one the bank refuses), and a fee adjustment planted for the
reconciliation to find."""

from __future__ import annotations

from typing import Any

import stripe

from tests.sandbox_support import running_receiver, running_sandbox, sdk_charge, wait_for

DAY = 86400


def _charge(sdk: stripe.StripeClient, amount: int, method: str = "pm_card_visa") -> Any:
    return sdk_charge(sdk, amount, method)


def _of(sdk: stripe.StripeClient, source: str) -> list[Any]:
    return list(sdk.v1.balance_transactions.list(params={"source": source}).data)


def test_a_charge_is_credited_less_stripes_fee_and_is_pending_until_available(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    intent = _charge(sdk, 1400)
    [txn] = _of(sdk, intent.latest_charge)
    assert (txn.type, txn.amount, txn.fee, txn.net, txn.currency) == (
        "charge",
        1400,
        46,
        1354,
        "eur",
    )
    assert [(d.type, d.amount) for d in txn.fee_details] == [("stripe_fee", 46)]
    assert txn.status == "pending" and txn.available_on - txn.created == 2 * DAY
    # Half a unit rounds up: 1.5% of 1700 is 25.5.
    assert _of(sdk, _charge(sdk, 1700).latest_charge)[0].fee == 26 + 25
    sandbox.age_balance(2 * DAY)
    again = sdk.v1.balance_transactions.retrieve(txn.id)
    assert again.status == "available" and again.created == txn.created - 2 * DAY


def test_a_refund_keeps_the_fee_and_a_failed_one_comes_back(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    intent = _charge(sdk, 2000, "pm_card_refundFail")
    refund = sdk.v1.refunds.create(params={"payment_intent": intent.id, "amount": 500})
    [txn] = _of(sdk, refund.id)
    assert (txn.type, txn.amount, txn.fee, txn.net) == ("refund", -500, 0, -500)
    assert refund.balance_transaction == txn.id
    assert _of(sdk, intent.latest_charge)[0].fee == 55  # not given back
    sandbox.settle_refunds()  # Stripe's failing refund card: the refund fails later
    failed = sdk.v1.refunds.retrieve(refund.id)
    back = sdk.v1.balance_transactions.retrieve(str(failed.failure_balance_transaction))
    assert (failed.status, back.type, back.amount, back.source) == (
        "failed",
        "refund_failure",
        500,
        refund.id,
    )


def test_a_chargeback_takes_the_amount_and_the_dispute_fee_and_a_win_returns_the_amount(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    intent = _charge(sdk, 3000, "pm_card_createDispute")
    [dispute] = sdk.v1.disputes.list(params={"payment_intent": intent.id}).data
    [withdrawn] = _of(sdk, dispute.id)
    assert (withdrawn.type, withdrawn.reporting_category) == ("adjustment", "dispute")
    assert (withdrawn.amount, withdrawn.fee, withdrawn.net) == (-3000, 2000, -5000)
    assert [d.description for d in withdrawn.fee_details] == ["Dispute fee"]
    assert [t.id for t in dispute.balance_transactions] == [withdrawn.id]
    sdk.v1.disputes.update(
        dispute.id, params={"evidence": {"uncategorized_text": "winning_evidence"}}
    )
    wait_for(lambda: len(_of(sdk, dispute.id)) == 2)
    reinstated = _of(sdk, dispute.id)[0]  # newest first
    assert (reinstated.amount, reinstated.fee, reinstated.reporting_category) == (
        3000,
        0,
        "dispute_reversal",
    )


def test_a_payout_takes_the_available_balance_and_lists_what_it_contains(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    first = _charge(sdk, 1000)
    refunded = _charge(sdk, 2000)
    sdk.v1.refunds.create(params={"payment_intent": refunded.id, "amount": 300})
    sandbox.age_balance(2 * DAY)
    later = _charge(sdk, 5000)  # not available yet: stays for the next payout
    [made] = sandbox.pay_out()
    payout = sdk.v1.payouts.retrieve(made["id"])
    # (1000 - 40) + (2000 - 55) - 300
    assert (payout.amount, payout.status, payout.currency, payout.automatic) == (
        2605,
        "paid",
        "eur",
        True,
    )
    inside = list(sdk.v1.balance_transactions.list(params={"payout": payout.id}).auto_paging_iter())
    assert sorted(t.type for t in inside) == ["charge", "charge", "payout", "refund"]
    assert sum(t.net for t in inside if t.type != "payout") == payout.amount
    [own] = [t for t in inside if t.type == "payout"]
    assert (own.id, own.amount, own.source) == (payout.balance_transaction, -2605, payout.id)
    assert first.latest_charge in {t.source for t in inside}
    assert later.latest_charge not in {t.source for t in inside}
    types = [e["type"] for e in sandbox.events() if e["type"].startswith("payout.")]
    assert types == ["payout.created", "payout.paid"]
    assert sandbox.pay_out() == []  # nothing available is left


def test_a_refused_payout_comes_back_and_goes_out_with_the_next(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    _charge(sdk, 1000)
    sandbox.age_balance(2 * DAY)
    [failed] = sandbox.pay_out(fail=True)
    payout = sdk.v1.payouts.retrieve(failed["id"])
    assert (payout.status, payout.failure_code) == ("failed", "account_closed")
    back = sdk.v1.balance_transactions.retrieve(str(payout.failure_balance_transaction))
    assert (back.type, back.amount, back.source) == ("payout_failure", 960, payout.id)
    assert "payout.failed" in [e["type"] for e in sandbox.events()]
    [retried] = sandbox.pay_out()
    assert retried["amount"] == 960 and retried["status"] == "paid"


def test_a_planted_fee_adjustment_is_taken_from_the_balance(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    planted = sandbox.plant_fee_adjustment(125)
    txn = sdk.v1.balance_transactions.retrieve(planted["id"])
    assert (txn.type, txn.reporting_category, txn.amount, txn.net) == (
        "adjustment",
        "fee",
        -125,
        -125,
    )


def test_automatic_payouts_run_on_their_interval(tmp_path: Any) -> None:
    with (
        running_receiver() as receiver,
        running_sandbox(
            str(tmp_path),
            "--webhook-url",
            receiver.url,
            "--available-after-s",
            "0",
            "--payout-interval-s",
            "0.3",
        ) as box,
    ):
        client = stripe.StripeClient("sk_test_sandbox", base_addresses={"api": box.url})
        _charge(client, 1000)
        wait_for(lambda: len(client.v1.payouts.list().data) == 1)
        [payout] = client.v1.payouts.list().data
        assert payout.amount == 960


def test_an_intents_charge_expands_with_its_balance_transaction(
    sdk: stripe.StripeClient, sandbox: Any
) -> None:
    """`expand[]=latest_charge.balance_transaction`, as Stripe documents for finding a
    payment's fee: the Charge, and in it the balance transaction with the fee."""
    intent = _charge(sdk, 1400)
    seen = sdk.v1.payment_intents.retrieve(
        intent.id, params={"expand": ["latest_charge.balance_transaction"]}
    )
    charge = seen.latest_charge
    assert isinstance(charge, stripe.Charge) and charge.id == intent.latest_charge
    assert (charge.amount, charge.payment_intent, charge.status) == (1400, intent.id, "succeeded")
    txn = charge.balance_transaction
    assert isinstance(txn, stripe.BalanceTransaction)
    assert (txn.amount, txn.fee, txn.net, txn.source) == (1400, 46, 1354, charge.id)
    only = sdk.v1.payment_intents.retrieve(intent.id, params={"expand": ["latest_charge"]})
    assert isinstance(only.latest_charge, stripe.Charge)
    assert only.latest_charge.balance_transaction == txn.id  # not expanded
    listed = sdk.v1.payment_intents.list(params={"expand": ["data.latest_charge"]})
    charges = [i.latest_charge for i in listed.data]
    assert [c.id for c in charges if isinstance(c, stripe.Charge)] == [charge.id]
