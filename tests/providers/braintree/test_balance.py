"""Braintree's side of the books as our client reads it: what each transaction and
dispute moved, the fee report's rows, each checked before it is believed; and the pages
of a day read through the sandbox (transactions an hour's search at a time, then the
disputes, then the fee report), none lost at a page's edge."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from providers.braintree import balance
from providers.braintree.balance import dispute_items, fee_items, transaction_items
from providers.braintree.client import BraintreeProvider
from providers.outcomes import BalanceTxn
from tests.providers.support import POLICY
from tests.sandbox_support import braintree_gateway

NOW = datetime(2026, 12, 5, 10, 0, tzinfo=UTC)


def _txn(kind: str, status: str, **more: Any) -> dict[str, Any]:
    history = more.pop("history", [status])
    return {
        "id": "abc123",
        "type": kind,
        "status": status,
        "amount": "12.34",
        "currency_iso_code": "EUR",
        "created_at": NOW.replace(tzinfo=None),  # as Braintree's SDK codec reads it
        "status_history": [{"status": s} for s in history],
        **more,
    }


def _said(items: list[BalanceTxn]) -> list[tuple[str, str, str, str, int, str | None]]:
    return [(i.txn_id, i.type, i.category, i.source_id, i.amount_minor, i.problem) for i in items]


@pytest.mark.parametrize("status", ["submitted_for_settlement", "settling", "settled"])
def test_a_sale_that_took_the_money_is_a_charge_of_its_payment(status: str) -> None:
    (item,) = transaction_items(_txn("sale", status))
    assert _said([item]) == [("abc123", "charge", "charge", "abc123", 1234, None)]
    assert (item.payment_ref, item.currency, item.created_at) == ("abc123", "EUR", NOW)


def test_a_settlement_declined_moved_no_money() -> None:
    # Braintree disburses nothing for it: its money never came (our payment fails, and a
    # success booked before is reversed: the two entries net to nothing).
    assert transaction_items(_txn("sale", "settlement_declined")) == []


def test_a_voided_sale_is_its_charge_and_the_whole_refund_made_as_the_void() -> None:
    voided = _txn("sale", "voided", history=["authorized", "submitted_for_settlement", "voided"])
    assert _said(transaction_items(voided)) == [
        ("abc123", "charge", "charge", "abc123", 1234, None),
        ("void:abc123", "refund", "refund", "abc123", -1234, None),
    ]


@pytest.mark.parametrize(
    ("status", "history"),
    [
        ("processor_declined", ["processor_declined"]),
        ("gateway_rejected", ["gateway_rejected"]),
        ("failed", ["failed"]),
        ("voided", ["voided"]),  # never took the money
    ],
)
def test_a_sale_that_took_no_money_moves_nothing(status: str, history: list[str]) -> None:
    assert transaction_items(_txn("sale", status, history=history)) == []


def test_a_credit_is_a_refund_and_one_declined_at_settlement_gives_it_back() -> None:
    assert _said(transaction_items(_txn("credit", "settled"))) == [
        ("abc123", "refund", "refund", "abc123", -1234, None)
    ]
    assert _said(transaction_items(_txn("credit", "settlement_declined")))[1] == (
        "settlement_declined:abc123",
        "refund_failure",
        "refund_failure",
        "abc123",
        1234,
        None,
    )


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"id": None}, "no id"),
        ({"amount": "12.345"}, "no whole amount"),
        ({"amount": "-5.00"}, "no whole amount"),
        ({"currency_iso_code": "EURO"}, "no currency"),
        ({"created_at": "yesterday"}, "no created_at"),
    ],
)
def test_a_transaction_that_cannot_be_believed_is_named_as_such(
    change: dict[str, Any], problem: str
) -> None:
    (item,) = transaction_items({**_txn("sale", "settled"), **change})
    assert item.problem == problem


def _dispute(kind: str = "chargeback", **more: Any) -> dict[str, Any]:
    return {
        "id": "dp1",
        "kind": kind,
        "amount_disputed": "12.34",
        "amount_won": "12.34",
        "currency_iso_code": "EUR",
        "status_history": [
            {"status": "open", "timestamp": NOW},
            {"status": "disputed", "timestamp": NOW + timedelta(hours=1)},
            {"status": "won", "timestamp": NOW + timedelta(hours=2)},
        ],
        **more,
    }


def test_a_chargeback_takes_the_money_when_opened_and_gives_back_what_was_won() -> None:
    items = dispute_items(_dispute())
    assert _said(items) == [
        ("dispute:dp1:open", "adjustment", "dispute", "dp1", -1234, None),
        ("dispute:dp1:won", "adjustment", "dispute_reversal", "dp1", 1234, None),
    ]
    assert [i.created_at for i in items] == [NOW, NOW + timedelta(hours=2)]


def test_an_inquiry_moves_nothing_and_a_malformed_dispute_is_named() -> None:
    assert dispute_items(_dispute("retrieval")) == []
    (opened, _) = dispute_items(_dispute(amount_disputed="lots"))
    assert opened.problem == "no whole amount_disputed, currency or time"


REPORT = (
    "Merchant Account ID,Transaction ID,Transaction Type,Disbursement Date,"
    "Settlement Currency ISO Code,Settlement Amount,Braintree Total Amount\n"
    "acct,abc123,sale,2026-12-05,EUR,12.34,0.53\n"
    "acct,def456,credit,2026-12-05,EUR,2.50,-0.05\n"
)


def test_the_fee_report_gives_each_transaction_its_fee() -> None:
    items = fee_items(REPORT, date(2026, 12, 5))
    assert [(i.txn_id, i.type, i.source_id, i.amount_minor, i.fee_minor) for i in items] == [
        ("fee:abc123", "fee", "abc123", 0, 53),
        ("fee:def456", "fee", "def456", 0, -5),
    ]
    assert {i.problem for i in items} == {None}


@pytest.mark.parametrize(
    ("report", "problem"),
    [
        ("Transaction ID,Fee\nabc,1.00\n", "the fee report lacks its columns"),
        (REPORT.replace("0.53", "0.535"), "the fee is not a whole amount of cents"),
        (REPORT.replace("0.53", "NaN"), "the fee is not a whole amount of cents"),
        (REPORT.replace("abc123,sale,2026-12-05,EUR", "abc123,sale,2026-12-05,E1"), "no currency"),
        (REPORT.replace("abc123", ""), "no transaction id"),
    ],
)
def test_a_fee_report_row_that_cannot_be_believed_is_named(report: str, problem: str) -> None:
    assert problem in {i.problem for i in fee_items(report, date(2026, 12, 5))}


def _client(sandbox: Any) -> BraintreeProvider:
    return BraintreeProvider(
        sandbox.url,
        "sandbox_merchant",
        "sandbox_public_key",
        "sandbox_private_key",
        "EUR",
        POLICY,
        graphql_url=f"{sandbox.url}/graphql",
    )


def test_a_day_is_read_page_by_page_and_nothing_is_lost_at_a_page_edge(
    sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway = braintree_gateway(sandbox.url)
    made = []
    for cents in ("10.00", "11.00", "12.00"):
        sale = gateway.transaction.sale(
            {
                "amount": cents,
                "payment_method_nonce": "fake-valid-nonce",
                "options": {"submit_for_settlement": True},
            }
        )
        assert sale.is_success
        made.append(sale.transaction.id)
    sandbox.age_braintree(60)  # settled and disbursed today (unless it is just past midnight)
    monkeypatch.setattr(balance, "PAGE_IDS", 2)  # two transactions a page
    start = datetime.combine(datetime.now(UTC).date(), datetime.min.time(), UTC)
    client, cursor, cursors, items = _client(sandbox), None, [], []
    while True:
        page = client.balance_page(start, start + timedelta(days=1), cursor)
        assert page is not None
        items += page.items
        cursor = page.next_cursor
        if cursor is None:
            break
        cursors.append(cursor)
    charges = sorted(i.txn_id for i in items if i.type == "charge")
    assert charges == sorted(made)
    fees = {i.source_id: i.fee_minor for i in items if i.type == "fee"}
    assert fees == dict(zip(made, (19 + 30, 21 + 30, 23 + 30), strict=True))
    assert cursors[-2:] == ["d:1", "f:0"]
    assert any(c.endswith(":2") for c in cursors)  # a window read in two pages


def test_a_report_url_elsewhere_than_tls_or_the_gateway_is_not_fetched(sandbox: Any) -> None:
    client = _client(sandbox)
    assert client._is_report_url("https://reports.example/fees.csv")
    assert client._is_report_url(f"{sandbox.url}/braintree-reports/x.csv")
    assert not client._is_report_url("http://169.254.169.254/latest/meta-data")
