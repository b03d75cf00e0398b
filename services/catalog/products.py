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
