"""The books' test steps: a red day for the pages and reads (one of our charges matched, a
fee adjustment of the provider's that our books do not have); a proxy planting
discrepancies in what the provider says."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from typing import Any

from flask import Flask
from sqlalchemy import select

from extensions import db
from models import Alert, DayStatus, ItemOutcome
from models.types import utcnow
from services.books import journal
from services.statements import reconcile
from tests.fault_proxy import FaultProxy, fault_proxy
from tests.helpers import charge_payment, committed_payment


def a_red_day(app: Flask, sandbox: Any) -> date:
    """Today, reconciled: our 10.00 charge matched, a 1.25 fee adjustment to look at."""
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    sandbox.plant_fee_adjustment(125)
    today = utcnow().date()
    with app.app_context():
        reconcile.reconcile("stripe", today)
    return today


# Discrepancies planted by a proxy that rewrites what the provider says (tests/fault_proxy.py).
LISTING = r"/v1/balance_transactions\?(?!.*payout=)"  # a day's listing, not a payout's
Edit = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def rewriting(edit: Edit) -> Callable[[bytes], bytes]:
    """A proxy's rewrite of a list's page through `edit` (a page with no item as it is)."""

    def rewrite(body: bytes) -> bytes:
        page = json.loads(body)
        if page["data"]:  # a listing of what came since the day: nothing to edit
            page["data"] = edit(page["data"])
        return json.dumps(page).encode()

    return rewrite


def rewriting_balance(change: Callable[[dict[str, Any]], None]) -> Callable[[bytes], bytes]:
    """A proxy's rewrite of `GET /v1/balance` through `change`."""

    def rewrite(body: bytes) -> bytes:
        balance = json.loads(body)
        change(balance)
        return json.dumps(balance).encode()

    return rewrite


@contextmanager
def proxied_app(make_app: Any, sandbox: Any) -> Iterator[tuple[Flask, FaultProxy]]:
    """An app whose Stripe calls go through a fault proxy in front of the sandbox."""
    with fault_proxy(sandbox.url) as proxy:
        yield make_app(STRIPE_API_BASE=proxy.url), proxy


def today() -> date:
    return utcnow().date()


def a_charge(app: Flask) -> int:
    """A 10.00 EUR payment charged at the sandbox (a 0.40 fee)."""
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    return payment_id


def booked(app: Flask) -> dict[tuple[str, str], int]:
    with app.app_context():
        return journal.balances()


def named(app: Flask, day: date, outcome: ItemOutcome) -> list[reconcile.Item]:
    """Reconcile the day: it does not reconcile, and its items of `outcome`, each alerted;
    the books still balance."""
    with app.app_context():
        result = reconcile.reconcile("stripe", day)
        assert result.status == DayStatus.UNRECONCILED
        found = [i for i in result.items if i.outcome == outcome]
        keys = {a.dedupe_key for a in db.session.scalars(select(Alert))}
        for item in found:
            assert f"books:stripe:{day}:{outcome.value}:{item.key}" in keys
        assert not any(journal.trial_balance().values())
        return found
