"""The catalog as the pages read it: active products only."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import select

from extensions import db
from models import Product


def active_products() -> Sequence[Product]:
    return db.session.scalars(
        select(Product).where(Product.is_active.is_(True)).order_by(Product.name)
    ).all()


def active_product(sku: str) -> Product | None:
    return db.session.scalar(select(Product).where(Product.sku == sku, Product.is_active.is_(True)))


def products_by_sku(skus: Iterable[str]) -> Sequence[Product]:
    return db.session.scalars(select(Product).where(Product.sku.in_(list(skus)))).all()


def skus_on_sale_by_currency() -> dict[str, list[str]]:
    """The SKUs of active products, by currency, sorted (the API contract's enum)."""
    rows = db.session.execute(
        select(Product.currency, Product.sku)
        .where(Product.is_active.is_(True))
        .order_by(Product.currency, Product.sku)
    )
    catalog: dict[str, list[str]] = {}
    for currency, sku in rows:
        catalog.setdefault(currency, []).append(sku)
    return catalog
