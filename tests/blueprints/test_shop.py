"""The catalog page: active products only, with prices formatted for people."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient

from extensions import db
from tests.factories import make_product


def test_the_catalog_lists_active_products_only(app: Flask, client: FlaskClient) -> None:
    with app.app_context():
        make_product("MUG-9", price_minor=1450)
        retired = make_product("OLD-1", price_minor=999)
        retired.is_active = False
        db.session.commit()
    page = client.get("/").get_data(as_text=True)
    assert "MUG-9" in page and "€14.50" in page
    assert "OLD-1" not in page and "€9.99" not in page
