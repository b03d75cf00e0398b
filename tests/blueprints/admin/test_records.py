"""Records: a payment's details lead to its refunds; an id that names no row is a
message, not an error."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import Wallet
from services.wallet import ledger
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


def test_a_ledger_entrys_source_links_its_movement_and_a_memo_is_only_text(
    app: Flask, admin_client: FlaskClient, sandbox: Any
) -> None:
    payment_id = charged(app, committed_topup(app, 700))  # its credit: payment N
    with app.app_context():
        wallet = db.session.scalar(select(Wallet).order_by(Wallet.id.desc()))
        assert wallet is not None
        ledger.debit(wallet, 5, "memo-debit", memo=f"refund {payment_id + 1000}")
    page = admin_client.get("/admin/admin_ledger_entries/").get_data(as_text=True)
    assert f'<a href="/admin/payment/{payment_id}">payment {payment_id}</a>' in page
    assert f"refund {payment_id + 1000}" in page  # the client's text, shown ...
    assert f'/admin/refund/{payment_id + 1000}"' not in page  # ... and never a link
    exported = admin_client.get("/admin/admin_ledger_entries/export/csv/").get_data(as_text=True)
    assert f"payment {payment_id}" in exported and "<a" not in exported
