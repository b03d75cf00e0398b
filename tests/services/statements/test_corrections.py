"""A provider's transaction read again with another fee: adjusted on the open day and
named, the first read kept; read the same again, nothing more."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest
from flask import Flask

from models import Account, DayStatus, ItemOutcome
from models.types import utcnow
from services.statements import reconcile
from tests.books_support import (
    LISTING,
    a_charge,
    booked,
    named,
    proxied_app,
    rewriting,
)
from tests.fault_proxy import REWRITE, FaultProxy

DAY = 86400


@pytest.fixture
def proxied(app: Flask, make_app: Any, sandbox: Any) -> Iterator[tuple[Flask, FaultProxy]]:
    with proxied_app(make_app, sandbox) as found:
        yield found


def _today() -> date:
    return utcnow().date()


def test_a_fee_corrected_later_is_adjusted_and_named(proxied: tuple[Flask, FaultProxy]) -> None:
    app, proxy = proxied
    a_charge(app)
    with app.app_context():
        assert reconcile.reconcile("stripe", _today()).status == DayStatus.RECONCILED

    def dearer(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        data[0].update(fee=data[0]["fee"] + 1, net=data[0]["net"] - 1)
        return data

    def held_less(body: bytes) -> bytes:  # its balance says the cent it kept too
        balance = json.loads(body)
        balance["pending"][0]["amount"] -= 1
        return json.dumps(balance).encode()

    proxy.add(REWRITE, LISTING, rewrite=rewriting(dearer), times=None)
    proxy.add(REWRITE, r"/v1/balance$", rewrite=held_less, times=None)
    [corrected] = named(app, _today(), ItemOutcome.CORRECTED)
    assert "fee €0.41, first €10.00 fee €0.40; €0.01 adjusted" in corrected.detail
    assert booked(app)[(Account.fees("stripe"), "EUR")] == 41
    with app.app_context():  # read the same again: nothing new to adjust
        assert reconcile.reconcile("stripe", _today()).status == DayStatus.RECONCILED
    assert booked(app)[(Account.fees("stripe"), "EUR")] == 41
