"""The catalog: the page that must stay fast whatever the providers do."""

from __future__ import annotations

from flask import Blueprint, render_template
from flask.typing import ResponseReturnValue
from sqlalchemy import select

from extensions import db
from models import Product

bp = Blueprint("shop", __name__)


@bp.get("/")
def catalog() -> ResponseReturnValue:
    products = db.session.scalars(
        select(Product).where(Product.is_active.is_(True)).order_by(Product.name)
    ).all()
    return render_template("shop/catalog.html", products=products)
