"""Discrepancies planted by a proxy that rewrites what the provider says (not by the
sandbox's own switches): each is named with its item and amount, leaves the day
unreconciled with an alert, and none changes a booked account silently."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from extensions import db
from models import Account, Alert, DayStatus, ItemOutcome
from models.types import utcnow
from services.books import journal
from services.statements import reconcile
from tests.fault_proxy import REWRITE, FaultProxy, fault_proxy
from tests.helpers import charge_payment, committed_payment

DAY = 86400
LISTING = r"/v1/balance_transactions\?(?!.*payout=)"  # a day's listing, not a payout's
Edit = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def _today() -> date:
    return utcnow().date()


def _rewriting(edit: Edit) -> Callable[[bytes], bytes]:
    def rewrite(body: bytes) -> bytes:
        page = json.loads(body)
        page["data"] = edit(page["data"])
        return json.dumps(page).encode()

    return rewrite


@pytest.fixture
def proxied(app: Flask, make_app: Any, sandbox: Any) -> Iterator[tuple[Flask, FaultProxy]]:
    with fault_proxy(sandbox.url) as proxy:
        yield make_app(STRIPE_API_BASE=proxy.url), proxy


def _charge(app: Flask) -> int:
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    return payment_id


def _booked(app: Flask) -> dict[tuple[str, str], int]:
    with app.app_context():
        return journal.balances()


def _named(app: Flask, day: date, outcome: ItemOutcome) -> list[reconcile.Item]:
    """Reconcile the day: it does not reconcile, and its items of `outcome`, each alerted."""
    with app.app_context():
        result = reconcile.reconcile("stripe", day)
        assert result.status == DayStatus.UNRECONCILED
        found = [i for i in result.items if i.outcome == outcome]
        keys = {a.dedupe_key for a in db.session.scalars(select(Alert))}
        for item in found:
            assert f"books:stripe:{day}:{outcome.value}:{item.key}" in keys
        assert journal.trial_balance() in ({}, {"EUR": 0})
        return found


def test_an_item_listed_twice_is_one_transaction_booked_once(
    proxied: tuple[Flask, FaultProxy],
) -> None:
    app, proxy = proxied
    _charge(app)
    proxy.add(REWRITE, LISTING, rewrite=_rewriting(lambda data: data + data[:1]))
    [twice] = _named(app, _today(), ItemOutcome.DUPLICATE)
    assert twice.theirs == 1000 and "listed twice" in twice.detail
    assert _booked(app)[(Account.fees("stripe"), "EUR")] == 40  # once


def test_the_same_charge_under_a_second_id_claims_nothing(
    proxied: tuple[Flask, FaultProxy],
) -> None:
    app, proxy = proxied
    _charge(app)

    def again(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [*data, dict(data[0], id=data[0]["id"] + "x", created=data[0]["created"] + 1)]

    proxy.add(REWRITE, LISTING, rewrite=_rewriting(again), times=None)
    [second] = _named(app, _today(), ItemOutcome.DUPLICATE)
    assert second.theirs == 1000 and "was matched to txn_" in second.detail
    assert _booked(app)[(Account.fees("stripe"), "EUR")] == 40  # not twice
    with app.app_context():  # read again, the first claimant keeps its entry
        result = reconcile.reconcile("stripe", _today())
        assert result.count(ItemOutcome.MATCHED, ItemOutcome.DUPLICATE) == 2


@pytest.mark.parametrize("cents", [1, -1])
def test_a_payout_short_or_long_by_a_cent_is_not_booked(
    proxied: tuple[Flask, FaultProxy], sandbox: Any, cents: int
) -> None:
    app, proxy = proxied
    _charge(app)
    sandbox.age_balance(2 * DAY)
    [paid] = sandbox.pay_out()

    def off(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for txn in data:
            if txn["type"] == "payout":
                txn["amount"] -= cents
                txn["net"] -= cents
        return data

    with app.app_context():
        reconcile.reconcile("stripe", _today() - timedelta(days=2))
    proxy.add(REWRITE, LISTING, rewrite=_rewriting(off), times=None)
    proxy.add(REWRITE, "payout=", rewrite=_rewriting(off), times=None)
    [payout] = _named(app, _today(), ItemOutcome.PAYOUT_DIFFERS)
    assert payout.theirs == -paid["amount"] - cents and "its contents sum to €9.60" in payout.detail
    assert (Account.bank("stripe"), "EUR") not in _booked(app)


def test_a_transaction_in_two_payouts_is_paid_out_once(
    proxied: tuple[Flask, FaultProxy], sandbox: Any
) -> None:
    app, proxy = proxied
    _charge(app)
    sandbox.age_balance(2 * DAY)
    [first] = sandbox.pay_out()
    _charge(app)
    sandbox.age_balance(2 * DAY)  # the first payout two days old, the second charge too
    [second] = sandbox.pay_out()
    with app.app_context():
        for back in (4, 2):
            reconcile.reconcile("stripe", _today() - timedelta(days=back))
    inside_first = [
        t for t in sandbox.balance_transactions(payout=first["id"]) if t["type"] != "payout"
    ]

    def again(data: list[dict[str, Any]]) -> list[dict[str, Any]]:  # the second re-pays it
        for txn in data:
            if txn["type"] == "payout":
                txn["amount"] -= first["amount"]
                txn["net"] -= first["amount"]
        return data + inside_first

    proxy.add(REWRITE, f"payout={second['id']}", rewrite=_rewriting(again), times=None)
    proxy.add(REWRITE, LISTING, rewrite=_rewriting(again), times=None)
    [payout] = _named(app, _today(), ItemOutcome.PAYOUT_DIFFERS)
    assert f"was paid out by {first['id']}" in payout.detail
    assert payout.theirs == -(first["amount"] + second["amount"])
    assert _booked(app)[(Account.bank("stripe"), "EUR")] == first["amount"]  # the first only


def test_a_failure_of_a_payout_we_never_had_books_nothing(
    proxied: tuple[Flask, FaultProxy],
) -> None:
    app, proxy = proxied
    _charge(app)

    def failure(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        made = dict(data[0], id="txn_planted_failure", type="payout_failure", fee=0)
        made.update(amount=999, net=999, source="po_never", reporting_category="payout_reversal")
        return [*data, made]

    proxy.add(REWRITE, LISTING, rewrite=_rewriting(failure))
    [failed] = _named(app, _today(), ItemOutcome.PAYOUT_DIFFERS)
    assert failed.theirs == 999 and "payout po_never failed: no such payout" in failed.detail
    assert (Account.bank("stripe"), "EUR") not in _booked(app)


def test_a_fee_corrected_later_is_adjusted_and_named(proxied: tuple[Flask, FaultProxy]) -> None:
    app, proxy = proxied
    _charge(app)
    with app.app_context():
        assert reconcile.reconcile("stripe", _today()).status == DayStatus.RECONCILED

    def dearer(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        data[0].update(fee=data[0]["fee"] + 1, net=data[0]["net"] - 1)
        return data

    proxy.add(REWRITE, LISTING, rewrite=_rewriting(dearer), times=None)
    [corrected] = _named(app, _today(), ItemOutcome.CORRECTED)
    assert "fee €0.41, first €10.00 fee €0.40; €0.01 adjusted" in corrected.detail
    assert _booked(app)[(Account.fees("stripe"), "EUR")] == 41
    with app.app_context():  # read the same again: nothing new to adjust
        assert reconcile.reconcile("stripe", _today()).status == DayStatus.RECONCILED
    assert _booked(app)[(Account.fees("stripe"), "EUR")] == 41


def test_a_refund_we_never_asked_for_is_named(proxied: tuple[Flask, FaultProxy]) -> None:
    app, proxy = proxied
    _charge(app)

    def refund(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        made = dict(data[0], id="txn_planted_refund", type="refund", fee=0)
        made.update(amount=-500, net=-500, source="re_never", reporting_category="refund")
        return [*data, made]

    proxy.add(REWRITE, LISTING, rewrite=_rewriting(refund))
    [refund_item] = _named(app, _today(), ItemOutcome.MISSING_AT_OURS)
    assert refund_item.theirs == -500 and "refund re_never" in refund_item.detail
    assert (Account.REFUNDS, "EUR") not in _booked(app)
