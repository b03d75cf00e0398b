"""The sandbox's Braintree fee report, as Braintree's GraphQL API hands it out: only with
the API keys, only for the report query and a date; its URL is signed and fetched
without the keys; the CSV lists what was disbursed that day with Braintree's fee (a
sale: 1.9% + 0.30; a refund: the rate's part given back), and nothing that did not
settle."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from typing import Any

import braintree
import requests

KEYS = ("sandbox_public_key", "sandbox_private_key")
QUERY = "query fees($date: Date!) { report { paymentLevelFees(date: $date) { url } } }"


def _ask(sandbox: Any, day: str, *, auth: tuple[str, str] = KEYS, query: str = QUERY) -> Any:
    return requests.post(
        f"{sandbox.url}/graphql",
        json={"query": query, "variables": {"date": day}},
        auth=auth,
        timeout=5,
    )


def _sale(braintree_sdk: braintree.BraintreeGateway, amount: str) -> Any:
    return braintree_sdk.transaction.sale(
        {
            "amount": amount,
            "payment_method_nonce": "fake-valid-nonce",
            "options": {"submit_for_settlement": True},
        }
    ).transaction


def test_the_days_report_lists_each_disbursed_transaction_with_its_fee(
    braintree_sdk: braintree.BraintreeGateway, sandbox: Any
) -> None:
    settled = _sale(braintree_sdk, "20.00")
    declined = _sale(braintree_sdk, "4001.00")  # its settlement is declined: never disbursed
    small = _sale(braintree_sdk, "9.00")
    sandbox.age_braintree(60)
    credit = braintree_sdk.transaction.refund(settled.id, "5.00").transaction
    sandbox.age_braintree(60)
    voided = braintree_sdk.transaction.void(_sale(braintree_sdk, "8.00").id)
    assert voided.is_success
    day = datetime.now(UTC).date().isoformat()
    answer = _ask(sandbox, day)
    assert answer.status_code == 200
    url = answer.json()["data"]["report"]["paymentLevelFees"]["url"]
    report = requests.get(url, timeout=5)  # a storage link: no keys
    assert report.status_code == 200
    rows = {row["Transaction ID"]: row for row in csv.DictReader(io.StringIO(report.text))}
    assert {k: rows[k]["Braintree Total Amount"] for k in rows} == {
        settled.id: "0.68",  # 1.9% of 20.00 + 0.30
        small.id: "0.47",  # 0.171 -> 0.17 + 0.30
        credit.id: "-0.10",  # 1.9% of 5.00 given back
    }
    assert declined.id not in rows
    assert {(r["Transaction Type"], r["Disbursement Date"]) for r in rows.values()} == {
        ("sale", day),
        ("credit", day),
    }
    assert rows[settled.id]["Settlement Currency ISO Code"] == "EUR"


def test_the_report_needs_the_keys_the_query_a_date_and_an_untouched_link(
    sandbox: Any,
) -> None:
    day = datetime.now(UTC).date().isoformat()
    assert _ask(sandbox, day, auth=("sandbox_public_key", "wrong")).status_code == 401
    other = _ask(sandbox, day, query="query { ping }").json()
    assert other["data"] is None and other["errors"]
    assert "Date" in _ask(sandbox, "05/12/2026").json()["errors"][0]["message"]
    url = _ask(sandbox, day).json()["data"]["report"]["paymentLevelFees"]["url"]
    forged = url.replace(day, "2020-01-01")
    assert requests.get(forged, timeout=5).status_code == 403
    assert requests.get(url.split("?")[0], timeout=5).status_code == 403
