"""Records: a payment's details lead to its refunds; an id that names no row is a
message, not an error."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from tests.helpers import charged, committed_topup, unknown_payment


def test_a_payments_details_show_its_transitions_and_its_refunds_page(
    admin_client: FlaskClient, app: Flask
) -> None:
    payment_id = unknown_payment(app)
    page = admin_client.get(f"/admin/admin_payments/details/?id={payment_id}").get_data(
        as_text=True
    )
    assert f"/admin/refunds/payment/{payment_id}" in page
    assert "Record does not exist" not in page
    missing = admin_client.get("/admin/admin_payments/details/?id=abc")  # names no row
    assert missing.status_code == 302
    assert "Record does not exist" in admin_client.get(missing.headers["Location"]).get_data(
        as_text=True
    )


def test_a_ledger_entrys_reference_links_its_movement(
    app: Flask, admin_client: FlaskClient, sandbox: Any
) -> None:
    payment_id = charged(app, committed_topup(app, 700))  # its credit: "payment N"
    page = admin_client.get("/admin/admin_ledger_entries/").get_data(as_text=True)
    assert f'<a href="/admin/payment/{payment_id}">payment {payment_id}</a>' in page
    exported = admin_client.get("/admin/admin_ledger_entries/export/csv/").get_data(as_text=True)
    assert f"payment {payment_id}" in exported and "<a" not in exported
