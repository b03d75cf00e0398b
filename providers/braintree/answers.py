"""What Braintree's answers say, shared by the client's calls: the statuses of a
transaction that took the money, and of one that did not; its amount and our reference as
echoed; a validation error's codes."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from providers.outcomes import Report

# Braintree's transaction statuses (its reference, "Transaction: statuses"), each read
# once here. Taken: the card was charged (a sale submitted for settlement, settling or
# settled; settlement_pending and settlement_confirmed are steps of the same settling).
# Authorized alone counts too: this shop submits every sale for settlement with it.
TAKEN = (
    "authorized",
    "submitted_for_settlement",
    "settling",
    "settlement_pending",
    "settlement_confirmed",
    "settled",
)
# Final, no money taken: the processor or gateway refused, the authorization expired
# unsettled, the sale was voided, or its settlement was declined (the money never came).
DECLINED = (
    "processor_declined",
    "failed",
    "gateway_rejected",
    "authorization_expired",
    "voided",
    "settlement_declined",
)
# Not final yet: the processor has not answered the authorization; asked again later.
IN_PROGRESS = ("authorizing",)


# Braintree's amounts: a decimal of at most two places, bounded in length (its own limit
# is far below 13 digits), so a value like 1E+900000 or Infinity is never computed on.
AMOUNT = re.compile(r"[0-9]{1,13}(\.[0-9]{1,2})?")


def amount_minor(raw: object) -> int | None:
    """Braintree's decimal amount ("12.34") as minor units; None for anything else."""
    if not isinstance(raw, str | int | Decimal) or isinstance(raw, bool):
        return None
    text = str(raw)
    if not AMOUNT.fullmatch(text):
        return None
    return int(Decimal(text) * 100)


def transaction_report(txn: dict[str, Any]) -> Report:
    """Braintree's decimal amount as minor units, its currency, our reference echoed."""
    minor = amount_minor(txn.get("amount"))
    return Report.of(minor, txn.get("currency_iso_code"), reference=txn.get("order_id"))


def search_ids(body: dict[str, Any]) -> list[str] | None:
    """The ids an `advanced_search_ids` answer lists (None: it is not such an answer)."""
    results = body.get("search_results")
    ids = results.get("ids") if isinstance(results, dict) else None
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else None


def listed(body: dict[str, Any], root: str, item: str) -> list[dict[str, Any]]:
    """The `item`s of a search page's `root` (one is a dict, several a list, none absent)."""
    holder = body.get(root)
    found = holder.get(item) if isinstance(holder, dict) else None
    items = [found] if isinstance(found, dict) else found or []
    return [i for i in items if isinstance(i, dict)]


def error_codes(errors: Any) -> set[str]:
    """Every validation error's code in an `api-error-response`, however deep."""
    found: set[str] = set()
    if isinstance(errors, dict):
        for key, value in errors.items():
            if key == "errors" and isinstance(value, list):
                found |= {str(e.get("code")) for e in value if isinstance(e, dict)}
            else:
                found |= error_codes(value)
    return found
