"""The on-call walk, as issue 32 tells it: a customer's email in the search -> the
payment -> the customer's page -> the payment again -> refund it from there (a
refunder may; a viewer may not) -> the payments list filtered by that email -> its CSV
with that payment. (The Flask test client walks it; tests/browser walks the pages in
Chromium.)"""

from __future__ import annotations

import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import Refund
from tests.admin_support import admin_as, admin_refund
from tests.helpers import charged_for, rows


def _anna_paid(app: Flask) -> int:
    return charged_for(app, "anna@example.com")


def _follow(client: FlaskClient, page: str, pattern: str) -> str:
    """The page of the first link in `page` whose address matches `pattern`."""
    found = re.search(rf'href="({pattern}[^"]*)"', page)
    assert found, pattern
    response = client.get(found.group(1).replace("&amp;", "&"))
    assert response.status_code == 200, found.group(1)
    return response.get_data(as_text=True)


def test_from_a_customers_email_to_a_refund_and_its_csv(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    payment_id = _anna_paid(app)
    refunder = admin_as(app, client, "refunder")
    story = refunder.get("/admin/search/?q=anna@example.com", follow_redirects=True)
    story_page = story.get_data(as_text=True)
    assert f"Payment #{payment_id}" in story_page  # one hit: the payment's own page
    customer_page = _follow(refunder, story_page, "/admin/admin_customers/details/")
    assert (
        "anna@example.com" in customer_page
        and f">#{payment_id}, €10.00, anna@example.com" in customer_page
    )
    again = _follow(refunder, customer_page, f"/admin/payment/{payment_id}")
    refund_page = _follow(refunder, again, f"/admin/refunds/payment/{payment_id}")
    assert "Refund" in refund_page
    assert admin_refund(refunder, payment_id) in (302, 303)
    assert rows(app, Refund) == 1
    listed = refunder.get(
        "/admin/admin_payments/?flt1_customer_email_equals=anna%40example.com"
    ).get_data(as_text=True)
    assert f"/admin/payment/{payment_id}" in listed
    exported = refunder.get(
        "/admin/admin_payments/export/csv/?flt1_customer_email_equals=anna%40example.com"
    ).get_data(as_text=True)
    assert [line.split(",")[0] for line in exported.splitlines()[1:]] == [str(payment_id)]


def test_a_viewer_walks_the_same_pages_but_cannot_refund(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    payment_id = _anna_paid(app)
    viewer = admin_as(app, client, "viewer")
    assert viewer.get(f"/admin/refunds/payment/{payment_id}").status_code == 200
    assert admin_refund(viewer, payment_id) == 403
    with app.app_context():
        assert db.session.scalars(select(Refund)).all() == []
