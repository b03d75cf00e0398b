"""The wallet's history, a page at a time: any page number lands on a real page."""

from __future__ import annotations

import pytest
from flask import Flask

from extensions import db
from services.wallet import ledger
from services.wallet.reads import ledger_page, wallet_in, wallets_of
from tests.factories import make_customer, make_wallet


@pytest.fixture
def filled(app_ctx: Flask) -> int:
    customer = make_customer()
    target = make_wallet(customer)
    db.session.commit()
    for n in range(25):
        ledger.credit(target, 10, f"op-{n}")
    return target.id


@pytest.mark.parametrize(
    ("requested", "page", "count"),
    [(None, 1, 10), (2, 2, 10), (3, 3, 5), (-5, 1, 10), (10**20, 3, 5)],
)
def test_pages_are_clamped(filled: int, requested: int | None, page: int, count: int) -> None:
    history = ledger_page(filled, requested, 10)
    assert (history.page, history.pages, len(history.entries)) == (page, 3, count)
    assert history.entries[0].id > history.entries[-1].id  # newest first


def test_a_customers_wallets_by_currency(app_ctx: Flask) -> None:
    customer = make_customer()
    usd, eur = make_wallet(customer, "USD"), make_wallet(customer, "EUR")
    db.session.commit()
    assert [w.id for w in wallets_of(customer.id)] == [eur.id, usd.id]
    assert wallet_in(customer.id, "USD") is usd and wallet_in(customer.id, "GBP") is None
