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

from models import Account, DayStatus, ItemOutcome
from services.statements import reconcile
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
