"""Exactly once, both ways, against a provider whose answers a proxy rewrote: a repeat,
a second claimant, a payout short or long, a transaction paid out twice, a failure of a
payout we never had, a refund we never asked for, an item gone: each named with its item
and amount, alerted, and none changes a booked account."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask

from extensions import db
from models import Account, DayStatus, ItemOutcome, PayoutStatus, ProviderPayout
from models.types import utcnow
from providers.outcomes import BalanceTxn
from services.statements import claims, provider_balance, reconcile
from tests.books_support import (
    LISTING,
    a_charge,
    booked,
    named,
    rewriting,
    today,
)
from tests.fault_proxy import REWRITE, FaultProxy

DAY = 86400


def test_an_item_listed_twice_is_one_transaction_booked_once(
    proxied: tuple[Flask, FaultProxy],
) -> None:
    app, proxy = proxied
    a_charge(app)
    proxy.add(REWRITE, LISTING, rewrite=rewriting(lambda data: data + data[:1]))
    [twice] = named(app, today(), ItemOutcome.DUPLICATE)
    assert twice.theirs == 1000 and "listed twice" in twice.detail
    assert booked(app)[(Account.fees("stripe"), "EUR")] == 40  # once


def test_the_same_charge_under_a_second_id_claims_nothing(
    proxied: tuple[Flask, FaultProxy],
) -> None:
    app, proxy = proxied
    a_charge(app)

    def again(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [*data, dict(data[0], id=data[0]["id"] + "x", created=data[0]["created"] + 1)]

    proxy.add(REWRITE, LISTING, rewrite=rewriting(again), times=None)
    [second] = named(app, today(), ItemOutcome.DUPLICATE)
    assert second.theirs == 1000 and "was matched to txn_" in second.detail
    assert booked(app)[(Account.fees("stripe"), "EUR")] == 40  # not twice
    with app.app_context():  # read again, the first claimant keeps its entry
        result = reconcile.reconcile("stripe", today())
        assert result.count(ItemOutcome.MATCHED, ItemOutcome.DUPLICATE) == 2


@pytest.mark.parametrize("cents", [1, -1])
def test_a_payout_short_or_long_by_a_cent_is_not_booked(
    proxied: tuple[Flask, FaultProxy], sandbox: Any, cents: int
) -> None:
    app, proxy = proxied
    a_charge(app)
    sandbox.age_balance(2 * DAY)
    [paid] = sandbox.pay_out()

    def off(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for txn in data:
            if txn["type"] == "payout":
                txn["amount"] -= cents
                txn["net"] -= cents
        return data

    with app.app_context():
        reconcile.reconcile("stripe", today() - timedelta(days=2))
    proxy.add(REWRITE, LISTING, rewrite=rewriting(off), times=None)
    proxy.add(REWRITE, "payout=", rewrite=rewriting(off), times=None)
    [payout] = named(app, today(), ItemOutcome.PAYOUT_DIFFERS)
    assert payout.theirs == -paid["amount"] - cents and "its contents sum to €9.60" in payout.detail
    assert (Account.bank("stripe"), "EUR") not in booked(app)


def test_a_transaction_in_two_payouts_is_paid_out_once(
    proxied: tuple[Flask, FaultProxy], sandbox: Any
) -> None:
    app, proxy = proxied
    a_charge(app)
    sandbox.age_balance(2 * DAY)
    [first] = sandbox.pay_out()
    a_charge(app)
    sandbox.age_balance(2 * DAY)  # the first payout two days old, the second charge too
    [second] = sandbox.pay_out()
    with app.app_context():
        for back in (4, 2):
            reconcile.reconcile("stripe", today() - timedelta(days=back))
    inside_first = [
        t for t in sandbox.balance_transactions(payout=first["id"]) if t["type"] != "payout"
    ]

    def again(data: list[dict[str, Any]]) -> list[dict[str, Any]]:  # the second re-pays it
        for txn in data:
            if txn["type"] == "payout":
                txn["amount"] -= first["amount"]
                txn["net"] -= first["amount"]
        return data + inside_first

    proxy.add(REWRITE, f"payout={second['id']}", rewrite=rewriting(again), times=None)
    proxy.add(REWRITE, LISTING, rewrite=rewriting(again), times=None)
    [payout] = named(app, today(), ItemOutcome.PAYOUT_DIFFERS)
    assert f"was paid out by {first['id']}" in payout.detail
    assert payout.theirs == -(first["amount"] + second["amount"])
    assert booked(app)[(Account.bank("stripe"), "EUR")] == first["amount"]  # the first only


def test_a_failure_of_a_payout_we_never_had_books_nothing(
    proxied: tuple[Flask, FaultProxy],
) -> None:
    app, proxy = proxied
    a_charge(app)

    def failure(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        made = dict(data[0], id="txn_planted_failure", type="payout_failure", fee=0)
        made.update(amount=999, net=999, source="po_never", reporting_category="payout_reversal")
        return [*data, made]

    proxy.add(REWRITE, LISTING, rewrite=rewriting(failure))
    [failed] = named(app, today(), ItemOutcome.PAYOUT_DIFFERS)
    assert failed.theirs == 999 and "payout po_never failed: no such payout" in failed.detail
    assert (Account.bank("stripe"), "EUR") not in booked(app)


def test_a_refund_we_never_asked_for_is_named(proxied: tuple[Flask, FaultProxy]) -> None:
    app, proxy = proxied
    a_charge(app)

    def refund(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        made = dict(data[0], id="txn_planted_refund", type="refund", fee=0)
        made.update(amount=-500, net=-500, source="re_never", reporting_category="refund")
        return [*data, made]

    proxy.add(REWRITE, LISTING, rewrite=rewriting(refund))
    [refund_item] = named(app, today(), ItemOutcome.MISSING_AT_OURS)
    assert refund_item.theirs == -500 and "refund re_never" in refund_item.detail
    assert (Account.REFUNDS, "EUR") not in booked(app)


def test_an_item_that_vanished_is_named_and_its_booking_stands(
    proxied: tuple[Flask, FaultProxy],
) -> None:
    app, proxy = proxied
    payment_id = a_charge(app)
    with app.app_context():
        assert reconcile.reconcile("stripe", today()).status == DayStatus.RECONCILED

    def emptied(body: bytes) -> bytes:  # gone from its balance too
        balance = json.loads(body)
        balance["pending"] = [dict(balance["pending"][0], amount=0)]
        return json.dumps(balance).encode()

    proxy.add(REWRITE, LISTING, rewrite=rewriting(lambda data: data[1:]), times=None)
    proxy.add(REWRITE, r"/v1/balance$", rewrite=emptied, times=None)
    [gone] = named(app, today(), ItemOutcome.VANISHED)
    assert gone.theirs == 1000 and gone.ours == 960 and "no longer listed" in gone.detail
    with app.app_context():  # named once: not missing at the provider as well
        result = reconcile.reconcile("stripe", today())
        assert result.count(ItemOutcome.MISSING_AT_PROVIDER, ItemOutcome.BALANCE_DIFFERS) == 0
        assert f"payment {payment_id}" not in " ".join(i.detail for i in result.items)
    assert booked(app)[(Account.fees("stripe"), "EUR")] == 40


PAYOUT = BalanceTxn("txn_po", "payout", "payout", "po_1", None, -1000, 0, "EUR", None)


def _failure(amount: int = 1000, currency: str = "EUR", payout: str = "po_1") -> BalanceTxn:
    return BalanceTxn(
        "txn_back", "payout_failure", "payout_reversal", payout, None, amount, 0, currency, None
    )


def _told(status: PayoutStatus, amount: int = 1000, provider: str = "stripe") -> None:
    db.session.add(
        ProviderPayout(
            provider=provider,
            payout_id="po_1",
            amount_minor=amount,
            currency="EUR",
            status=status,
            event_created_at=utcnow(),
        )
    )
    db.session.commit()


@pytest.mark.parametrize(
    ("failure", "outcome", "named"),
    [
        (_failure(), ItemOutcome.BOOKED, "payout po_1 failed: its money back (€10.00)"),
        (_failure(999), ItemOutcome.PAYOUT_DIFFERS, "€9.99 back for a payout of €10.00"),
        (_failure(currency="USD"), ItemOutcome.PAYOUT_DIFFERS, "back for a payout of €10.00"),
        (_failure(payout="po_2"), ItemOutcome.PAYOUT_DIFFERS, "po_2 failed: no such payout"),
    ],
)
def test_a_failure_is_matched_to_its_payout_read_the_same_day_or_before(
    app_ctx: Flask, failure: BalanceTxn, outcome: ItemOutcome, named: str
) -> None:
    for read in ([PAYOUT], []):  # the payout listed today, or read on its own day
        if not read:
            provider_balance.record("stripe", [PAYOUT])
            provider_balance.record("braintree", [dict_txn(PAYOUT, "po_2")])  # not Stripe's
            db.session.commit()
        item = claims.judge_failure("stripe", failure, read)
        assert (item.outcome, item.theirs) == (outcome, failure.amount_minor)
        assert named in item.detail
    other = claims.judge_failure("stripe", failure, [dict_txn(PAYOUT, "po_9")])
    assert other.outcome == outcome  # another payout's transaction is not this one's


def dict_txn(txn: BalanceTxn, payout: str) -> BalanceTxn:
    return BalanceTxn(
        f"txn_{payout}", txn.type, txn.category, payout, None, txn.amount_minor, 0, "EUR", None
    )


@pytest.mark.parametrize(
    ("status", "amount", "outcome", "named"),
    [
        (PayoutStatus.FAILED, 1000, ItemOutcome.BOOKED, "its money back"),
        (PayoutStatus.PAID, 1000, ItemOutcome.PAYOUT_DIFFERS, "its events say paid"),
        (PayoutStatus.FAILED, 900, ItemOutcome.PAYOUT_DIFFERS, "its events said €9.00"),
    ],
)
def test_a_failure_is_booked_only_when_its_payouts_events_say_it_failed(
    app_ctx: Flask, status: PayoutStatus, amount: int, outcome: ItemOutcome, named: str
) -> None:
    _told(status, amount)
    item = claims.judge_failure("stripe", _failure(), [])  # known by its events alone
    assert item.outcome == outcome and named in item.detail
    if outcome == ItemOutcome.PAYOUT_DIFFERS and amount != 1000:
        assert item.ours == amount


def test_a_braintree_payouts_events_do_not_vouch_for_a_stripe_failure(app_ctx: Flask) -> None:
    _told(PayoutStatus.FAILED, provider="braintree")
    item = claims.judge_failure("stripe", _failure(), [])
    assert item.outcome == ItemOutcome.PAYOUT_DIFFERS and "no such payout" in item.detail
