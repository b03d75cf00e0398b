"""The catalog: the page that must stay fast whatever the providers do."""

from __future__ import annotations

from flask import Blueprint, render_template
from flask.typing import ResponseReturnValue

from services.catalog.products import active_products

bp = Blueprint("shop", __name__)


@bp.get("/")
def catalog() -> ResponseReturnValue:
    return render_template("shop/catalog.html", products=active_products())
