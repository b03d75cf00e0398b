"""The journal of a period exported for an accountant, both providers in one file: the
beancount file passes beancount's own bean-check (balanced, every account where our
trial balance says at the period's end, after the balances it opened with), a file
tampered by a cent does not; the CSV has a row per posting with decimal amounts."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import time_machine
from flask import Flask

from models import Account, Source, SourceKind
from models.money import Money
from models.types import utcnow
from services.books import exports, journal, reports
from services.statements import reconcile
from tests.helpers import charge_payment, committed_payment, new_wallet

BEAN_CHECK = Path(sys.executable).parent / "bean-check"


def _post(kind: SourceKind, source_id: int, legs: list[tuple[str, int, str]]) -> None:
    journal.post(Source(kind, source_id), "succeeded", [journal.Leg(*leg) for leg in legs])


def _a_week(app: Flask, sandbox: Any) -> tuple[date, date]:
    """Books over a few days: a Braintree charge in JPY four days ago (before the period),
    a wallet opened, Stripe charges reconciled today (their fees booked)."""
    today = utcnow().date()
    with time_machine.travel(utcnow() - timedelta(days=4)), app.app_context():
        _post(
            SourceKind.PAYMENT, 9001, [("clearing:braintree", 500, "JPY"), ("revenue", -500, "JPY")]
        )
        journal.db.session.commit()
    new_wallet(app, balance_minor=700)
    for _ in range(2):
        payment_id = committed_payment(app)
        with app.app_context():
            charge_payment(payment_id)
    with app.app_context():
        reconcile.reconcile("stripe", today)
    return today - timedelta(days=2), today


def _bean_check(text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    ledger = tmp_path / "books.beancount"
    ledger.write_text(text)
    return subprocess.run(
        [str(BEAN_CHECK), str(ledger)], capture_output=True, text=True, timeout=60
    )


def test_the_beancount_export_passes_bean_check_and_ends_where_our_books_do(
    app: Flask, sandbox: Any, tmp_path: Path
) -> None:
    start, end = _a_week(app, sandbox)
    with app.app_context():
        text = "".join(exports.as_beancount(start, end))
        ours = {
            (r.account, r.currency): r.debit_minor - r.credit_minor
            for r in reports.trial_balance(end)
        }
    checked = _bean_check(text, tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Opening balances" in text and "Assets:Clearing:Braintree  500 JPY" in text
    for (account, currency), amount in ours.items():  # every account asserted at its end
        name, value = exports.beancount_account(account), Money(amount, currency).major
        assert f"balance {name} {value} ~ 0 {currency}" in text
    assert ours[(Account.fees("stripe"), "EUR")] == 80


def test_a_file_tampered_by_a_cent_fails_bean_check(
    app: Flask, sandbox: Any, tmp_path: Path
) -> None:
    start, end = _a_week(app, sandbox)
    with app.app_context():
        text = "".join(exports.as_beancount(start, end))
    fee = "  Expenses:Fees:Stripe  0.40 EUR\n  Assets:Clearing:Stripe  -0.40 EUR\n"
    assert fee in text
    tampered = text.replace(fee, fee.replace("0.40", "0.41"), 1)
    checked = _bean_check(tampered, tmp_path)
    assert checked.returncode != 0 and "Balance failed" in checked.stdout + checked.stderr


def test_the_csv_has_a_row_per_posting_with_both_providers(app: Flask, sandbox: Any) -> None:
    _, end = _a_week(app, sandbox)
    with app.app_context():
        rows = list(
            csv.DictReader(io.StringIO("".join(exports.as_csv(end - timedelta(days=4), end))))
        )
    assert list(rows[0]) == exports.CSV_HEADER
    providers = {
        row["account"].split(":")[-1] for row in rows if row["account"].startswith("clearing:")
    }
    assert providers == {"stripe", "braintree"}
    fees = [row for row in rows if row["account"] == "fees:stripe"]
    assert [(row["debit"], row["credit"], row["currency"]) for row in fees] == [
        ("0.40", "", "EUR")
    ] * 2
    assert all(row["provider_id"].startswith("txn_") for row in fees)
    euros = [row for row in rows if row["currency"] == "EUR"]
    debits = sum(Decimal(row["debit"] or 0) for row in euros)
    assert debits == sum(Decimal(row["credit"] or 0) for row in euros) > 0


@pytest.mark.parametrize(
    ("address", "name"),
    [
        ("clearing:stripe", "Assets:Clearing:Stripe"),
        ("wallet:7", "Liabilities:Wallets:W7"),
        ("fees:braintree", "Expenses:Fees:Braintree"),
        ("bank:my_psp", "Assets:Bank:My-psp"),
        ("refunds", "Income:Refunds"),
    ],
)
def test_every_account_has_a_beancount_name(address: str, name: str) -> None:
    assert exports.beancount_account(address) == name


def test_the_command_writes_the_period_and_refuses_a_period_backwards(
    app: Flask, sandbox: Any, runner: Any, tmp_path: Path
) -> None:
    start, end = _a_week(app, sandbox)
    out = tmp_path / "books.beancount"
    done = runner.invoke(
        args=[
            "books",
            "export",
            "--from",
            str(start),
            "--to",
            str(end),
            "--format",
            "beancount",
            "--output",
            str(out),
        ]
    )
    assert done.exit_code == 0, done.output
    assert _bean_check(out.read_text(), tmp_path).returncode == 0
    backwards = runner.invoke(args=["books", "export", "--from", str(end), "--to", str(start)])
    assert backwards.exit_code == 2 and "before --from" in backwards.output
