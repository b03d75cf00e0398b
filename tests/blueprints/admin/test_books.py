"""The Books page: each reconciled day (red when it does not reconcile), a day's items
with the provider's record and ours side by side, its fees and payouts, "Reconcile again"
on the provider's queue, a day closed and reopened with a reason, for an operator only;
the accountant's trial balance, ledger, payout report and exports."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from datetime import timedelta
from decimal import Decimal
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from models.types import utcnow
from services.statements import reconcile
from tests.admin_support import admin_as, admin_csrf
from tests.books_support import a_red_day
from tests.helpers import (
    charge_payment,
    committed_payment,
    queued_job_ids,
    run_maintenance_jobs,
    sandbox_events,
    signed_post,
)


def _a_red_day(app: Flask, sandbox: Any) -> str:
    return a_red_day(app, sandbox).isoformat()


def test_a_red_day_shows_each_item_to_look_at_with_both_sides(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    day = _a_red_day(app, sandbox)
    viewer = admin_as(app, client, "viewer")
    days = viewer.get("/admin/books/").get_data(as_text=True)
    assert f'data-day="{day}"' in days and "badge-danger" in days and "unreconciled" in days
    assert "reconcile-again" not in days  # a viewer reads only (no form)
    page = viewer.get(f"/admin/books/stripe/{day}").get_data(as_text=True)
    unmatched = page.split('class="table table-sm books-unmatched"')[1].split("</table>")[0]
    assert "missing at ours" in unmatched and "adjustment (fee)" in unmatched
    assert "-€1.25" in unmatched  # the provider's record, as money
    matched = page.split('class="table table-sm books-matched"')[1].split("</table>")[0]
    assert "€10.00" in matched and "fee €0.40" in matched and "entry #" in matched
    assert "Fees of the day: €0.40" in page and "No payout on this day." in page


def test_the_days_journal_is_a_csv_whose_debits_equal_its_credits(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    day = _a_red_day(app, sandbox)
    viewer = admin_as(app, client, "viewer")
    answer = viewer.get(f"/admin/books/export?from={day}&to={day}&format=csv")
    assert answer.mimetype == "text/csv"
    assert f"journal-{day}-to-{day}.csv" in answer.headers["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(answer.get_data(as_text=True))))
    assert list(rows[0]) == [
        "date",
        "entry",
        "account",
        "debit",
        "credit",
        "currency",
        "source",
        "provider_id",
    ]
    totals: dict[str, Decimal] = defaultdict(Decimal)
    for row in rows:
        totals[row["currency"]] += Decimal(row["debit"] or 0) - Decimal(row["credit"] or 0)
    assert totals == {"EUR": Decimal(0)}
    charge = [r for r in rows if r["source"].endswith(" succeeded")]
    assert {(r["account"], r["debit"], r["credit"]) for r in charge} == {
        ("clearing:stripe", "10.00", ""),
        ("revenue", "", "10.00"),
    }
    assert all(r["provider_id"].startswith("pi_") for r in charge)
    fee = [r for r in rows if r["source"].endswith(" fee")]
    assert {(r["account"], r["debit"]) for r in fee} == {
        ("fees:stripe", "0.40"),
        ("clearing:stripe", ""),
    }
    assert all(r["provider_id"].startswith("txn_") for r in fee)


def test_reconcile_again_queues_the_day_for_an_operator_only(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    day = _a_red_day(app, sandbox)
    operator = admin_as(app, client, "operator")
    again = operator.post(
        f"/admin/books/stripe/{day}/again", data={"csrf_token": admin_csrf(operator)}
    )
    assert again.status_code == 303
    assert f"books-reconcile-stripe-{day}" in queued_job_ids(app)
    with app.test_client() as other:
        viewer = admin_as(app, other, "viewer")
        refused = viewer.post(
            f"/admin/books/stripe/{day}/again", data={"csrf_token": admin_csrf(viewer)}
        )
        assert refused.status_code == 403


def test_a_day_or_provider_that_is_not_there_is_a_404(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    viewer = admin_as(app, client, "viewer")
    for path in (
        "stripe/2026-13-01",
        "stripe/yesterday",
        "braintree/2026-12-01",
        "stripe/2020-01-01",
    ):
        assert viewer.get(f"/admin/books/{path}").status_code == 404
    assert viewer.get("/admin/books/").status_code == 200


def test_a_days_payouts_say_what_their_events_said(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    """Two payouts of the day, one refused by the bank: each with its status as its
    events (delivered to our endpoint, signed) told it."""
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    sandbox.age_balance(2 * 86400)
    [refused] = sandbox.pay_out(fail=True)
    [paid] = sandbox.pay_out()
    for kind in ("payout.created", "payout.paid", "payout.failed"):
        for event in sandbox_events(sandbox, kind):
            assert signed_post(client, event).status_code == 200
    run_maintenance_jobs(app)
    today = utcnow().date()
    with app.app_context():
        reconcile.reconcile("stripe", today)
    page = admin_as(app, client, "viewer").get(f"/admin/books/stripe/{today}")
    listed = page.get_data(as_text=True).split('class="books-payouts"')[1].split("</ul>")[0]
    assert f"<code>{refused['id']}</code>" in listed and f"<code>{paid['id']}</code>" in listed
    assert "its events say <strong>failed</strong> (account_closed)" in listed
    assert "its events say <strong>paid</strong>" in listed and "arriving " in listed


def test_an_operator_closes_a_day_and_reopens_it_with_a_reason(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
        day = utcnow().date().isoformat()
        reconcile.reconcile("stripe", day=utcnow().date())
    operator = admin_as(app, client, "operator")
    closed = operator.post(
        f"/admin/books/stripe/{day}/close", data={"csrf_token": admin_csrf(operator)}
    )
    assert closed.status_code == 303
    page = operator.get(f"/admin/books/stripe/{day}").get_data(as_text=True)
    assert 'class="books-closed"' in page and "books-reopen" in page
    no_reason = operator.post(
        f"/admin/books/stripe/{day}/reopen", data={"csrf_token": admin_csrf(operator), "reason": ""}
    )
    assert no_reason.status_code == 303
    assert "books-closed" in operator.get(f"/admin/books/stripe/{day}").get_data(as_text=True)
    with app.test_client() as other:
        viewer = admin_as(app, other, "viewer")
        refused = viewer.post(
            f"/admin/books/stripe/{day}/reopen",
            data={"csrf_token": admin_csrf(viewer), "reason": "a viewer's wish"},
        )
        assert refused.status_code == 403
    operator.post(
        f"/admin/books/stripe/{day}/reopen",
        data={"csrf_token": admin_csrf(operator), "reason": "a fee corrected late"},
    )
    page = operator.get(f"/admin/books/stripe/{day}").get_data(as_text=True)
    trail = page.split('class="books-trail"')[1].split("</ul>")[0]
    assert "closed by" in trail and "reopened by" in trail and "a fee corrected late" in trail


def test_the_accountants_pages_read_the_books(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    day = _a_red_day(app, sandbox)
    viewer = admin_as(app, client, "viewer")
    trial = viewer.get(f"/admin/books/trial-balance?as_of={day}").get_data(as_text=True)
    table = trial.split('class="table table-sm books-trial-balance"')[1]
    assert "clearing:stripe" in table and "€9.60" in table and "€10.00" in table
    assert "table-danger" not in table  # debits equal credits
    ledger = viewer.get(f"/admin/books/ledger?account=clearing:stripe&from={day}&to={day}")
    lines = ledger.get_data(as_text=True).split('class="table table-sm books-ledger"')[1]
    assert "€10.00" in lines and "-€0.40" in lines and "€9.60" in lines  # the running balance
    beancount = viewer.get(f"/admin/books/export?from={day}&to={day}&format=beancount")
    assert "balance Assets:Clearing:Stripe 9.60 ~ 0 EUR" in beancount.get_data(as_text=True)
    assert viewer.get("/admin/books/payouts").status_code == 200
    for bad in (
        "trial-balance?as_of=yesterday",
        f"ledger?account=clearing:stripe&from={day}&to=2000-01-01",
        "ledger?account=not an account",
        "export?format=xlsx",
        "export?from=2000-01-01&to=2026-12-01",
    ):
        assert viewer.get(f"/admin/books/{bad}").status_code in (400, 404), bad


def test_the_payout_report_lists_what_each_payout_paid_out(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    sandbox.age_balance(2 * 86400)
    [paid] = sandbox.pay_out()
    with app.app_context():
        reconcile.reconcile("stripe", utcnow().date() - timedelta(days=2))
        reconcile.reconcile("stripe", utcnow().date())
    page = admin_as(app, client, "viewer").get("/admin/books/payouts").get_data(as_text=True)
    report = page.split(f'data-payout="{paid["id"]}"')[1].split("</section>")[0]
    assert "Booked to the bank." in report and "1 transactions paid out" in report
    assert "€9.60" in report and "charge" in report
