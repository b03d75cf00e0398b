"""The catalog pages of the dashboard: create, edit, retire, with CSRF and the audit."""

from __future__ import annotations

import re

from flask import Flask
from flask.testing import FlaskClient

from tests.admin_support import ADMIN_EMAIL
from tests.helpers import csrf_token_from


def test_an_admin_creates_edits_and_retires_a_product(
    app: Flask, admin_client: FlaskClient
) -> None:
    page = admin_client.get("/admin/catalog/").get_data(as_text=True)
    form = {
        "csrf_token": csrf_token_from(page),
        "sku": "TEA-1",
        "name": "Tea",
        "price": "4.50",
        "currency": "EUR",
    }
    bad = admin_client.post("/admin/catalog/new", data={**form, "price": "-1"})
    assert bad.status_code == 422
    created = admin_client.post("/admin/catalog/new", data=form)
    assert created.status_code == 303
    product_url = created.headers["Location"]
    edited = admin_client.post(product_url, data={**form, "name": "Green tea"})
    assert edited.status_code == 303
    retired = admin_client.post(
        f"{product_url}/active", data={"csrf_token": form["csrf_token"], "active": "no"}
    )
    assert retired.status_code == 303
    shown = admin_client.get(product_url).get_data(as_text=True)
    assert "Green tea" in shown and "(retired)" in shown
    assert len(re.findall(ADMIN_EMAIL, shown)) == 3  # created, edited, retired
    assert "Green tea" not in admin_client.get("/").get_data(as_text=True)
    no_token = admin_client.post("/admin/catalog/new", data={**form, "csrf_token": ""})
    assert no_token.status_code == 400
