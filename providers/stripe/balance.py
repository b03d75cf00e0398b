"""Stripe's balance, read (`GET /v1/balance_transactions`, paged, filtered by `created`
or by `payout`, `expand[]=data.source`), as a part of StripeProvider. Every item is
checked before it is believed: an id, a known type, whole amounts whose net is the
amount less the fee, a three-letter currency; a malformed item is kept as such (the
reconciliation names it), never read as a movement."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import requests

from providers.http import HttpPolicy, fetch_list, fetch_object
from providers.outcomes import BalancePage, BalanceTxn, ProviderBalance

BALANCE_PAGE_SIZE = 100  # Stripe's maximum
ID_RE = re.compile(r"^[A-Za-z0-9_]{1,100}$")
CURRENCY_RE = re.compile(r"^[a-z]{3}$")


class StripeBalance:
    """The balance reads of StripeProvider (which provides these attributes)."""

    api_base: str
    policy: HttpPolicy
    session: requests.Session

    def balance_page(
        self, created_from: datetime, created_to: datetime, after: str | None = None
    ) -> BalancePage | None:
        """One page of the balance transactions created in [from, to), newest first,
        after the cursor `after`; None when Stripe cannot be asked now."""
        params = {
            "created[gte]": str(int(created_from.timestamp())),
            "created[lt]": str(int(created_to.timestamp())),
            "limit": str(BALANCE_PAGE_SIZE),
            "expand[]": "data.source",
        }
        return self._page(params, after)

    def payout_page(self, payout_id: str, after: str | None = None) -> BalancePage | None:
        """One page of what a payout contains (its own transaction included)."""
        params = {"payout": payout_id, "limit": str(BALANCE_PAGE_SIZE)}
        return self._page(params, after)

    def payout_is_automatic(self, payout_id: str) -> bool | None:
        """Whether Stripe paid the payout out on its schedule (`GET /v1/payouts/<id>`):
        only such a payout's contents can be listed (`?payout=`); a manual one is paid
        from the available balance. None when it cannot be asked, or says neither."""
        body = fetch_object(
            self.session,
            f"{self.api_base}/v1/payouts/{payout_id}",
            {},
            self.policy,
            "stripe payout",
        )
        automatic = body.get("automatic") if body else None
        return automatic if isinstance(automatic, bool) else None

    def balance_now(self) -> ProviderBalance | None:
        """What Stripe holds for us now (`GET /v1/balance`), per currency, available and
        pending together; None when it cannot be asked, or its answer is not a balance
        (an amount that is not whole, a currency that is not three letters)."""
        body = fetch_object(
            self.session, f"{self.api_base}/v1/balance", {}, self.policy, "stripe balance now"
        )
        if body is None or body.get("object") != "balance":
            return None
        held: dict[str, int] = {}
        for part in ("available", "pending"):
            funds = body.get(part)
            if not isinstance(funds, list):
                return None
            for fund in funds:
                amount = fund.get("amount") if isinstance(fund, dict) else None
                currency = fund.get("currency") if isinstance(fund, dict) else None
                if not _whole(amount) or not isinstance(currency, str):
                    return None
                if not CURRENCY_RE.match(currency):
                    return None
                held[currency.upper()] = held.get(currency.upper(), 0) + int(amount)  # type: ignore[arg-type]
        return ProviderBalance(held)

    def _page(self, params: dict[str, str], after: str | None) -> BalancePage | None:
        if after:
            params["starting_after"] = after
        url = f"{self.api_base}/v1/balance_transactions"
        page = fetch_list(self.session, url, params, self.policy, "stripe balance")
        if page is None:
            return None
        items = page["data"]
        last_id = items[-1].get("id") if items else None
        more = page.get("has_more") is True and isinstance(last_id, str)
        return BalancePage([balance_txn(item) for item in items], last_id if more else None)


def balance_txn(item: dict[str, Any]) -> BalanceTxn:
    """A balance transaction as we read it; `problem` says why it cannot be believed."""
    txn_id = item.get("id")
    source = item.get("source")
    source_obj = source if isinstance(source, dict) else {}
    source_id = source_obj.get("id") if source_obj else source
    amount, fee, net = item.get("amount"), item.get("fee"), item.get("net")
    currency, created = item.get("currency"), item.get("created")
    problem = None
    if not isinstance(txn_id, str) or not ID_RE.match(txn_id):
        problem, txn_id = "no id", str(txn_id)[:100]
    elif not all(_whole(v) for v in (amount, fee, net, created)):
        problem = "amount, fee, net or created is not a whole number"
    elif net != amount - fee:  # type: ignore[operator]
        problem = "net is not amount less fee"
    elif not isinstance(currency, str) or not CURRENCY_RE.match(currency):
        problem = "no currency"
    elif not isinstance(source_id, str) or not ID_RE.match(source_id):
        problem = "no source"
    rate = _rate(item.get("exchange_rate"))
    if problem is None and rate is False:
        problem = "exchange_rate is not a positive number"
    source_amount, source_currency = source_obj.get("amount"), source_obj.get("currency")
    intent = source_obj.get("payment_intent")
    return BalanceTxn(
        txn_id=txn_id,
        type=str(item.get("type"))[:32],
        category=str(item.get("reporting_category"))[:32],
        source_id=str(source_id)[:100],
        payment_ref=intent if isinstance(intent, str) and ID_RE.match(intent) else None,
        amount_minor=_whole_or_zero(amount),
        fee_minor=_whole_or_zero(fee),
        currency=currency.upper() if isinstance(currency, str) else "???",
        created_at=datetime.fromtimestamp(_whole_or_zero(created), UTC)
        if _whole(created)
        else None,
        problem=problem,
        exchange_rate=rate if isinstance(rate, Decimal) else None,
        source_amount=source_amount if _whole(source_amount) else None,
        source_currency=source_currency.upper()
        if isinstance(source_currency, str) and CURRENCY_RE.match(source_currency)
        else None,
    )


def _rate(raw: object) -> Decimal | bool | None:
    """Stripe's exchange rate (a JSON number, or null: no conversion); False when it is
    something else."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return False
    rate = Decimal(str(raw))
    return rate if rate.is_finite() and 0 < rate < 10**9 else False


def _whole_or_zero(value: object) -> int:
    return value if isinstance(value, int) and _whole(value) else 0


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**15
