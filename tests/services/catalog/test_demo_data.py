"""Demo data: created once, the admin's password shown once, an opening balance once."""

from __future__ import annotations

from flask import Flask
from sqlalchemy import func, select

from extensions import db
from models import LedgerEntry, Product
from services.catalog.demo_data import DEMO_PRODUCTS, seed_catalog, seed_demo_accounts


def test_seeding_twice_adds_nothing_the_second_time(app_ctx: Flask) -> None:
    seed_catalog()
    first = list(seed_demo_accounts(["EUR"]))
    seed_catalog()
    second = list(seed_demo_accounts(["EUR"]))
    assert len(first) == 3 and any("(shown once)" in line for line in first)
    assert second == []
    count = db.session.scalar(select(func.count()).select_from(Product))
    entries = db.session.scalar(select(func.count()).select_from(LedgerEntry))
    assert count == len(DEMO_PRODUCTS) and entries == 2  # one opening balance per customer
