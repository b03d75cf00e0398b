"""Braintree's changes to a transaction after its sale: submitting it for settlement,
voiding it (only before it settles) and refunding it (only once it settles: a refund
is a `credit` transaction of its own, which settles later too), as the gateway enforces
them, with its error codes."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from flask import Response

from sandbox.braintree.gateway import (
    amount_of,
    answer,
    body_of,
    bp,
    invalid,
    load,
    new_id,
    save,
)
from sandbox.braintree.objects import shown, step
from sandbox.context import RequestFaults, store, with_faults

REFUNDABLE = ("settled", "settling")
VOIDABLE = ("authorized", "submitted_for_settlement")


def _changed(faults: RequestFaults, txn: dict[str, Any]) -> Response:
    return faults.after_commit(answer("transaction", shown(txn)))


@bp.put("/merchants/<merchant_id>/transactions/<transaction_id>/submit_for_settlement")
@with_faults("braintree", "submit_for_settlement")
def submit_for_settlement(faults: RequestFaults, merchant_id: str, transaction_id: str) -> Response:
    faults.slow_down()
    if faults.internal_error_before():  # a 500 of a POST or PUT: nothing done
        return Response(status=500)
    with store().transaction() as conn:
        txn = load(conn, transaction_id)
        if txn is None:
            return Response(status=404)
        if txn["status"] != "authorized":
            return invalid(
                "Cannot submit for settlement unless status is authorized.", "91507", "base"
            )
        step(txn, "submitted_for_settlement")
        save(conn, txn)
    return _changed(faults, txn)


@bp.put("/merchants/<merchant_id>/transactions/<transaction_id>/void")
@with_faults("braintree", "void")
def void(faults: RequestFaults, merchant_id: str, transaction_id: str) -> Response:
    faults.slow_down()
    if faults.internal_error_before():  # a 500 of a POST or PUT: nothing done
        return Response(status=500)
    s = store()
    with s.transaction() as conn:
        txn = load(conn, transaction_id)
        if txn is None:
            return Response(status=404)
        if txn["status"] not in VOIDABLE:
            return invalid(
                "Transaction can only be voided if status is authorized, "
                "submitted_for_settlement, or - for PayPal - settlement_pending.",
                "91504",
                "base",
            )
        step(txn, "voided")
        save(conn, txn)
        if txn["type"] == "sale":  # the card is not charged after all
            conn.execute(
                "UPDATE charges SET status = 'voided' WHERE dialect = 'braintree' "
                "AND object_id = ?",
                (txn["id"],),
            )
    return _changed(faults, txn)


@bp.post("/merchants/<merchant_id>/transactions/<transaction_id>/refund")
@with_faults("braintree", "refund")
def refund(faults: RequestFaults, merchant_id: str, transaction_id: str) -> Response:
    given = body_of().get("transaction")
    params: dict[str, Any] = given if isinstance(given, dict) else {}
    faults.slow_down()
    if faults.internal_error_before():  # a 500 of a POST or PUT: nothing done
        return Response(status=500)
    s = store()
    with s.transaction() as conn:
        sale = load(conn, transaction_id)
        if sale is None:
            return Response(status=404)
        if sale["type"] != "sale" or sale["status"] not in REFUNDABLE:
            return invalid("Cannot refund transaction unless it is settled.", "91506", "base")
        left = Decimal(sale["amount"]) - sum(
            (Decimal(credit["amount"]) for credit in _credits(conn, sale)), Decimal(0)
        )
        if left <= 0:
            return invalid("Transaction has already been completely refunded.", "91512", "base")
        raw = params.get("amount")  # none, or empty (the SDK's refund(id)): all that is left
        amount = amount_of(raw) if raw not in (None, "") else left
        if amount is None:
            return invalid("Amount is an invalid format.", "81503", "amount")
        if amount > left:
            return invalid("Refund amount is too large.", "91521", "amount")
        now = time.time()
        order_id = params.get("order_id")
        credit = {
            **{k: v for k, v in sale.items() if k in _KEPT},
            "id": new_id(),
            "type": "credit",
            "amount": f"{amount:.2f}",
            "order_id": order_id if isinstance(order_id, str) else sale.get("order_id"),
            "refunded_transaction_id": sale["id"],
            "refund_ids": [],
            "created_at_s": now,
            "updated_at_s": now,
            "status_history": [],
        }
        step(credit, "submitted_for_settlement", now)
        save(conn, credit)
        sale["refund_ids"] = [*sale["refund_ids"], credit["id"]]
        save(conn, sale)
        s.record_refund(
            conn,
            "braintree",
            {
                "id": credit["id"],
                "_payment": sale["id"],
                "_payment_ref": sale.get("order_id"),
                "_refund_ref": credit["order_id"],
                "amount": int(amount * 100),
                "currency": credit["currency_iso_code"],
                "status": "submitted_for_settlement",
            },
        )
    return faults.after_commit(answer("transaction", shown(credit), 201))


# What a refund's credit transaction keeps of its sale: the card, the account, the currency.
_KEPT = (
    "currency_iso_code",
    "merchant_account_id",
    "credit_card",
    "processor_response_code",
    "processor_response_text",
    "processor_response_type",
    "gateway_rejection_reason",
)


def _credits(conn: Any, sale: dict[str, Any]) -> list[dict[str, Any]]:
    found = [load(conn, credit_id) for credit_id in sale["refund_ids"]]
    return [credit for credit in found if credit is not None and credit["status"] != "voided"]
