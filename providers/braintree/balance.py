"""Braintree's side of the books, read as the day's movements of our money (a part of
BraintreeProvider). Braintree has no balance transactions as Stripe has; what moved is
read from three published sources, page by page (the cursor says which):
- the transactions created in the range, an hour's search at a time
  (`advanced_search_ids` by `created_at`, then the transactions by id, 50 a call as
  Braintree's SDK reads them): a sale that took the money is a charge (+); a sale whose
  settlement was declined moved nothing (its money never came: our payment failed, and
  a success booked before is reversed the same day); a voided sale that had taken the
  money is its charge and the void (-, the whole refund made as the void, named by the
  sale); a credit is a refund (-), and one declined at settlement its money back (+);
- the disputes a change of which took effect in the range (`disputes/advanced_search`
  by `effective_date`): a chargeback opened takes the disputed amount (-), one won gives
  back what was won (+); an inquiry (retrieval) moves nothing;
- the fees, from Braintree's payment-level fee report of each day in the range (GraphQL
  `report.paymentLevelFees`, a CSV file at the URL it answers): one item per row, the
  fee of the transaction it names (disbursed that day), booked as Braintree says it.
  A transaction's `disbursement_details` carry no fee, so the report is the only source.
Every item is checked before it is believed (an id, whole amounts, a currency, a time);
a malformed one is kept as such (the reconciliation names it), never read as money."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit

import requests

from providers.braintree.answers import TAKEN, listed, search_ids, transaction_report
from providers.http import HttpPolicy, build_session
from providers.outcomes import BalancePage, BalanceTxn

WINDOW = timedelta(hours=1)  # one search of transactions
PAGE_IDS = 500  # transactions a page (of one window's search)
FETCH_IDS = 50  # transactions a call, as Braintree's SDK fetches them
GRAPHQL_VERSION = "2019-01-01"
FEE_REPORT_QUERY = "query fees($date: Date!) { report { paymentLevelFees(date: $date) { url } } }"
FEE_COLUMNS = ("Transaction ID", "Settlement Currency ISO Code", "Braintree Total Amount")
WAS_TAKEN = ("authorized", "submitted_for_settlement")  # in a voided sale's history


class BraintreeBalance:
    """The balance reads of BraintreeProvider (which provides these attributes)."""

    _call: Callable[..., Any]
    _read: Callable[[requests.Response], dict[str, Any]]
    graphql_url: str
    policy: HttpPolicy
    session: requests.Session

    def balance_page(
        self, created_from: datetime, created_to: datetime, after: str | None = None
    ) -> BalancePage | None:
        """One page of what moved in [from, to): transactions ("t:<window>:<offset>"),
        then disputes ("d:<page>"), then each day's fees ("f:<day>"); None when
        Braintree cannot be asked now."""
        kind, *at = (after or "t:0:0").split(":")
        if kind == "t":
            return self._transactions(created_from, created_to, int(at[0]), int(at[1]))
        if kind == "d":
            return self._disputes(created_from, created_to, int(at[0]))
        return self._fees(created_from, created_to, int(at[0]))

    def payout_page(self, payout_id: str, after: str | None = None) -> BalancePage | None:
        """Braintree's disbursements are not read as payouts here (none is listed)."""
        return BalancePage([])

    # -- transactions -------------------------------------------------------------

    def _transactions(
        self, start: datetime, end: datetime, window: int, offset: int
    ) -> BalancePage | None:
        windows = max(1, math.ceil((end - start) / WINDOW))
        low = start + window * WINDOW
        high = min(low + WINDOW, end)
        ids = self._ids({"created_at": {"min": low, "max": high}})
        if ids is None:
            return None
        items: list[BalanceTxn] = []
        chosen = ids[offset : offset + PAGE_IDS]
        for first in range(0, len(chosen), FETCH_IDS):
            found = self._by_ids(chosen[first : first + FETCH_IDS])
            if found is None:
                return None
            items += [
                item
                for txn in found
                for item in transaction_items(txn)
                if item.created_at is None or low <= item.created_at < high
            ]
        if offset + PAGE_IDS < len(ids):
            return BalancePage(items, f"t:{window}:{offset + PAGE_IDS}")
        return BalancePage(items, f"t:{window + 1}:0" if window + 1 < windows else "d:1")

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """The answer to a search (the client's own call and reader), or None when
        Braintree did not answer it."""
        answer = self._call("POST", path, body)
        if not isinstance(answer, requests.Response) or answer.status_code != 200:
            return None
        read = self._read(answer)
        return None if "_malformed" in read else read

    def _ids(self, criteria: dict[str, Any]) -> list[str] | None:
        answer = self._post("/transactions/advanced_search_ids", {"search": criteria})
        return search_ids(answer) if answer is not None else None

    def _by_ids(self, ids: list[str]) -> list[dict[str, Any]] | None:
        if not ids:
            return []
        answer = self._post("/transactions/advanced_search", {"search": {"ids": ids}})
        return listed(answer, "credit_card_transactions", "transaction") if answer else None

    # -- disputes -----------------------------------------------------------------

    def _disputes(self, start: datetime, end: datetime, page: int) -> BalancePage | None:
        first, last = start.date(), (end - timedelta(microseconds=1)).date()
        criteria = {"effective_date": {"min": first, "max": last}}
        answer = self._post(f"/disputes/advanced_search?page={page}", {"search": criteria})
        found = (answer or {}).get("disputes")
        if answer is None or not isinstance(found, dict):
            return None
        items = [
            item
            for dispute in listed(answer, "disputes", "dispute")
            for item in dispute_items(dispute)
            if item.created_at is None or start <= item.created_at < end
        ]
        total, size = found.get("total_items"), found.get("page_size")
        more = isinstance(total, int) and isinstance(size, int) and page * size < total
        return BalancePage(items, f"d:{page + 1}" if more else "f:0")

    # -- fees ---------------------------------------------------------------------

    def _fees(self, start: datetime, end: datetime, day_index: int) -> BalancePage | None:
        day = start.date() + timedelta(days=day_index)
        text = self._fee_report(day)
        if text is None:
            return None
        items = fee_items(text, day)
        more = datetime.combine(day + timedelta(days=1), datetime.min.time(), UTC) < end
        return BalancePage(items, f"f:{day_index + 1}" if more else None)

    def _fee_report(self, day: date) -> str | None:
        """The CSV of the day's fee report, or None when it cannot be had now."""
        try:
            response = self.session.post(
                self.graphql_url,
                json={"query": FEE_REPORT_QUERY, "variables": {"date": day.isoformat()}},
                headers={
                    "Content-Type": "application/json",
                    "Accept": "application/json",
                    "Braintree-Version": GRAPHQL_VERSION,
                },
                timeout=self.policy.timeout,
            )
            body = response.json() if response.status_code == 200 else None
        except (requests.RequestException, ValueError):
            return None
        data = body.get("data") if isinstance(body, dict) else None
        report = data.get("report") if isinstance(data, dict) else None
        fees = report.get("paymentLevelFees") if isinstance(report, dict) else None
        url = fees.get("url") if isinstance(fees, dict) else None
        if not isinstance(url, str) or not self._is_report_url(url):
            return None
        try:  # a storage link: fetched without our keys
            got = build_session(self.policy, is_keyed_post_retryable=False).get(
                url, timeout=self.policy.timeout
            )
        except requests.RequestException:
            return None
        return got.text if got.status_code == 200 else None

    def _is_report_url(self, url: str) -> bool:
        """Over TLS, or from the gateway's own origin (the sandbox's plain HTTP)."""
        given, ours = urlsplit(url), urlsplit(self.graphql_url)
        return given.scheme == "https" or (given.scheme, given.netloc) == (
            ours.scheme,
            ours.netloc,
        )


def transaction_items(txn: dict[str, Any]) -> list[BalanceTxn]:
    """What a transaction moved of our money (nothing for one that took none)."""
    txn_id, status, kind = txn.get("id"), txn.get("status"), txn.get("type")
    history = txn.get("status_history")
    statuses = (
        {step.get("status") for step in history if isinstance(step, dict)}
        if isinstance(history, list)
        else set()
    )
    if kind == "sale" and status in TAKEN:
        return [_item(txn, "charge", "charge", 1)]
    if kind == "sale" and status == "voided" and statuses & set(WAS_TAKEN):
        return [_item(txn, "charge", "charge", 1), _item(txn, "refund", "refund", -1, "void")]
    if kind == "credit" and status in TAKEN:
        return [_item(txn, "refund", "refund", -1)]
    if kind == "credit" and status == "settlement_declined":
        back = _item(txn, "refund_failure", "refund_failure", 1, f"settlement_declined:{txn_id}")
        return [_item(txn, "refund", "refund", -1), back]
    return []


def _item(
    txn: dict[str, Any], kind: str, category: str, sign: int, named: str | None = None
) -> BalanceTxn:
    """One item of a transaction: `named` its own id when the transaction makes two
    (`void` names a void's by the sale: `void:<sale>`)."""
    txn_id = txn.get("id")
    good_id = isinstance(txn_id, str) and 0 < len(txn_id) <= 80
    source = str(txn_id)[:100]
    report = transaction_report(txn)
    created = _when(txn.get("created_at"))
    problem = None
    if not good_id:
        problem = "no id"
    elif report.amount_minor is None or report.amount_minor <= 0:
        problem = "no whole amount"
    elif report.currency is None or len(report.currency) != 3 or not report.currency.isalpha():
        problem = "no currency"
    elif created is None:
        problem = "no created_at"
    item_id = source if named is None else (f"void:{source}" if named == "void" else named)
    dispute_named = named is not None and named != "void" and kind == "adjustment"
    return BalanceTxn(
        txn_id=item_id[:100],
        type=kind,
        category=category,
        source_id=(item_id if dispute_named else source)[:100],
        payment_ref=source if kind == "charge" and good_id else None,
        amount_minor=sign * (report.amount_minor or 0),
        fee_minor=0,
        currency=report.currency or "???",
        created_at=created,
        problem=problem,
    )


def dispute_items(dispute: dict[str, Any]) -> list[BalanceTxn]:
    """A chargeback's money: taken when it opened, given back when it was won, each on
    the day it took effect (an inquiry moves none)."""
    if dispute.get("kind") == "retrieval":
        return []
    dispute_id = dispute.get("id")
    history = dispute.get("status_history")
    items = []
    for change in history if isinstance(history, list) else []:
        status = change.get("status") if isinstance(change, dict) else None
        if status not in ("open", "won"):
            continue
        field = "amount_disputed" if status == "open" else "amount_won"
        report = transaction_report(
            {"amount": dispute.get(field), "currency_iso_code": dispute.get("currency_iso_code")}
        )
        created = _when(change.get("timestamp"))
        problem = None
        if not isinstance(dispute_id, str) or not dispute_id:
            problem = "no id"
        elif report.amount_minor is None or report.currency is None or created is None:
            problem = f"no whole {field}, currency or time"
        items.append(
            BalanceTxn(
                txn_id=f"dispute:{str(dispute_id)[:80]}:{status}",
                type="adjustment",
                category="dispute" if status == "open" else "dispute_reversal",
                source_id=str(dispute_id)[:100],
                payment_ref=None,
                amount_minor=(-1 if status == "open" else 1) * (report.amount_minor or 0),
                fee_minor=0,
                currency=report.currency or "???",
                created_at=created,
                problem=problem,
            )
        )
    return items


def fee_items(text: str, day: date) -> list[BalanceTxn]:
    """The fee report's rows: each the fee of a transaction disbursed that day (a
    refund's negative: the part given back). A report without the columns we read is
    one unreadable item, never a fee."""
    at = datetime.combine(day, datetime.min.time(), UTC)
    reader = csv.DictReader(io.StringIO(text))
    if not set(FEE_COLUMNS) <= set(reader.fieldnames or ()):
        return [_fee(f"fees:{day}", "", 0, "???", at, "the fee report lacks its columns")]
    items = []
    for number, row in enumerate(reader, start=1):
        txn_id, currency = row["Transaction ID"] or "", row["Settlement Currency ISO Code"] or ""
        fee = _minor(row["Braintree Total Amount"])
        problem = None
        if not txn_id or len(txn_id) > 80:
            problem, txn_id = "no transaction id", f"row {number} of {day}"
        elif fee is None:
            problem = "the fee is not a whole amount of cents"
        elif len(currency) != 3 or not currency.isalpha():
            problem = "no currency"
        items.append(_fee(f"fee:{txn_id}", txn_id, fee or 0, currency.upper(), at, problem))
    return items


def _fee(
    item_id: str, txn_id: str, fee: int, currency: str, at: datetime, problem: str | None
) -> BalanceTxn:
    return BalanceTxn(
        item_id[:100], "fee", "fee", txn_id[:100], None, 0, fee, currency, at, problem
    )


def _minor(raw: object) -> int | None:
    try:
        amount = Decimal(str(raw)) * 100
    except (InvalidOperation, ValueError):
        return None
    if not amount.is_finite() or amount != amount.to_integral() or abs(amount) >= 10**15:
        return None
    return int(amount)


def _when(raw: object) -> datetime | None:
    if isinstance(raw, datetime):
        return raw if raw.tzinfo is not None else raw.replace(tzinfo=UTC)
    if isinstance(raw, str):
        try:
            found = datetime.fromisoformat(raw)
        except ValueError:
            return None
        return found if found.tzinfo is not None else found.replace(tzinfo=UTC)
    return None
