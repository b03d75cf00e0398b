"""Admins keep the catalog: create, edit, retire (and restore) products, validated, each
change recorded with the admin. Prices live on the product; an order line keeps the
price it was sold at, so an edit never changes an existing order."""

from __future__ import annotations

import json
import re
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from extensions import db
from models import Product, ProductChange, money
from models.money import InvalidAmountError, validate_money
from services.platform.errors import ConflictError, NotFoundError, UnprocessableError
from settings import settings

SKU_RE = re.compile(r"[A-Z0-9][A-Z0-9_-]{0,63}")


def clean(form: dict[str, Any], locale: str = "en") -> dict[str, Any]:
    """The product's fields from a form, validated (the price as a person types it in
    `locale`); UnprocessableError names the field."""
    sku = str(form.get("sku", "")).strip().upper()
    if not SKU_RE.fullmatch(sku):
        raise UnprocessableError("SKU: 1 to 64 letters, digits, '-' or '_'", code="invalid_sku")
    name = " ".join(str(form.get("name", "")).split())
    if not 1 <= len(name) <= 200:
        raise UnprocessableError("name: 1 to 200 characters", code="invalid_name")
    description = str(form.get("description", "")).strip()
    if len(description) > 1000:
        raise UnprocessableError("description: at most 1000 characters", code="invalid_text")
    try:
        typed = money.parse(str(form.get("price", "")), str(form.get("currency", "")), locale)
        price, currency = validate_money(
            typed.amount_minor,
            typed.currency,
            max_minor=settings().money.max_amount_minor,
            allowed=settings().money.currencies,
        )
    except InvalidAmountError as exc:
        raise UnprocessableError(f"price: {exc}", code="invalid_amount") from None
    return {
        "sku": sku,
        "name": name,
        "description": description,
        "price_minor": price,
        "currency": currency,
    }


def create_product(form: dict[str, Any], actor: str, locale: str = "en") -> Product:
    fields = clean(form, locale)
    product = Product(**fields, is_active=True)
    _save(product, "created", {k: [None, v] for k, v in fields.items()}, actor)
    return product


def edit_product(product_id: int, form: dict[str, Any], actor: str, locale: str = "en") -> Product:
    product = _locked(product_id)
    fields = clean(form, locale)
    changes = {k: [getattr(product, k), v] for k, v in fields.items() if getattr(product, k) != v}
    for key, value in fields.items():
        setattr(product, key, value)
    _save(product, "edited", changes, actor)
    return product


def set_active(product_id: int, is_active: bool, actor: str) -> Product:
    """Retire (hidden from the catalog, refused in new orders) or restore a product."""
    product = _locked(product_id)
    if product.is_active != is_active:
        product.is_active = is_active
        _save(
            product,
            "restored" if is_active else "retired",
            {"is_active": [not is_active, is_active]},
            actor,
        )
    return product


def all_products() -> list[Product]:
    return list(db.session.scalars(select(Product).order_by(Product.is_active.desc(), Product.sku)))


def product_page(product_id: int) -> tuple[Product, list[ProductChange]] | None:
    product = db.session.get(Product, product_id)
    if product is None:
        return None
    changes = db.session.scalars(
        select(ProductChange)
        .where(ProductChange.product_id == product_id)
        .order_by(ProductChange.id.desc())
    )
    return product, list(changes)


def _locked(product_id: int) -> Product:
    product = db.session.get(Product, product_id, with_for_update=True)
    if product is None:
        raise NotFoundError(f"no product {product_id}", code="product_not_found")
    return product


def _save(product: Product, action: str, changes: dict[str, Any], actor: str) -> None:
    try:
        db.session.add(product)
        db.session.flush()
    except IntegrityError:
        db.session.rollback()
        raise ConflictError(f"another product has SKU {product.sku}", code="sku_taken") from None
    db.session.add(
        ProductChange(
            product_id=product.id,
            action=action,
            actor=actor[:254],
            changes=json.dumps(changes, default=str),
        )
    )
    db.session.commit()
