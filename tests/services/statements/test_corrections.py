"""A provider's transaction read again with another fee: adjusted on the open day and
named, the first read kept; read the same again, nothing more."""

from __future__ import annotations

import json
from typing import Any

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


def test_a_fee_corrected_later_is_adjusted_and_named(proxied: tuple[Flask, FaultProxy]) -> None:
    app, proxy = proxied
    a_charge(app)
    with app.app_context():
        assert reconcile.reconcile("stripe", today()).status == DayStatus.RECONCILED

    def dearer(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        data[0].update(fee=data[0]["fee"] + 1, net=data[0]["net"] - 1)
        return data

    def held_less(body: bytes) -> bytes:  # its balance says the cent it kept too
        balance = json.loads(body)
        balance["pending"][0]["amount"] -= 1
        return json.dumps(balance).encode()

    proxy.add(REWRITE, LISTING, rewrite=rewriting(dearer), times=None)
    proxy.add(REWRITE, r"/v1/balance$", rewrite=held_less, times=None)
    [corrected] = named(app, today(), ItemOutcome.CORRECTED)
    assert "fee €0.41, first €10.00 fee €0.40; €0.01 adjusted" in corrected.detail
    assert booked(app)[(Account.fees("stripe"), "EUR")] == 41
    with app.app_context():  # read the same again: nothing new to adjust
        assert reconcile.reconcile("stripe", today()).status == DayStatus.RECONCILED
    assert booked(app)[(Account.fees("stripe"), "EUR")] == 41
