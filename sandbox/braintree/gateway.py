"""Braintree's gateway, transactions: what its own SDK (`braintree` on PyPI) sends and
reads, pointed at this sandbox by a `braintree.Environment` of plain HTTP.

- `POST /merchants/{id}/transactions` (a sale): Braintree's test nonces and amounts
  decide it (sandbox/braintree/testing.py); no idempotency key: a repeat of the same
  amount with the same card within the duplicate window is `gateway_rejected`,
  reason `duplicate` (Braintree's duplicate checking), never charged twice;
- `GET .../transactions/{id}`; `POST .../transactions/advanced_search_ids` (by
  `order_id` and/or a `created_at` range) and `.../advanced_search` (by `ids`), which
  see a transaction only once it is older than the search lag, like Stripe's search;
- `PUT .../transactions/{id}/submit_for_settlement`, `.../void`, and
  `POST .../transactions/{id}/refund` (only a settled or settling transaction: an
  unsettled one is voided instead, as Braintree requires).
A submitted transaction settles `--braintree-settle-s` after it was submitted, as it
is read (`settling`, then `settled`, or `settlement_declined` for the test amounts that
decline at settlement). Answers are Braintree's XML; its errors are 422
`api-error-response`s with their codes."""

from __future__ import annotations

import base64
import hmac
import json
import secrets
import string
import time
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from flask import Blueprint, Response, request

from sandbox.braintree import nonces, testing
from sandbox.braintree.notifications import SETTLEMENT_KINDS
from sandbox.braintree.objects import shown, step
from sandbox.braintree.xml import XmlError, parse, render, render_collection
from sandbox.context import RequestFaults, settings, store, with_faults
from sandbox.events import create_event
from sandbox.store import Store

bp = Blueprint("braintree", __name__)
UNSETTLED = ("authorized", "submitted_for_settlement")
FAILED = ("processor_declined", "gateway_rejected", "failed", "voided")


def answer(root: str, value: dict[str, Any], status: int = 200) -> Response:
    return Response(render(root, value), status=status, mimetype="application/xml")


def invalid(message: str, code: str, attribute: str, *, transaction: Any = None) -> Response:
    """Braintree's validation error (422): the SDK's ErrorResult."""
    body: dict[str, Any] = {
        "errors": {
            "transaction": {"errors": [{"code": code, "attribute": attribute, "message": message}]},
            "errors": [],
        },
        "message": message,
        "params": {},
    }
    if transaction is not None:
        body = {"errors": {"errors": []}, "message": message, "params": {}}
        body["transaction"] = transaction
    return answer("api-error-response", body, 422)


@bp.before_request
def authenticate() -> Response | None:
    """HTTP Basic with the public and private key, for the configured merchant only."""
    config = settings()
    expected = f"{config.braintree_public_key}:{config.braintree_private_key}"
    given = request.headers.get("Authorization", "")
    token = base64.b64encode(expected.encode()).decode()
    if not hmac.compare_digest(given, f"Basic {token}"):
        return Response(status=401)
    if (request.view_args or {}).get("merchant_id") != config.braintree_merchant_id:
        return Response(status=403)
    return None


def body_of() -> dict[str, Any]:
    """The request's document as {root: what it holds} ({} when it is not XML)."""
    try:
        root, value = parse(request.get_data())
    except XmlError:
        return {}
    return {root: value}


def new_id() -> str:
    return "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(8))


def load(conn: Any, transaction_id: str) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT body FROM braintree_transactions WHERE id = ?", (transaction_id,)
    ).fetchone()
    return _settled(conn, json.loads(row["body"])) if row else None


def save(conn: Any, txn: dict[str, Any]) -> None:
    conn.execute(
        "INSERT INTO braintree_transactions (id, order_id, status, card, amount, created, body) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET status = excluded.status, "
        "body = excluded.body",
        (
            txn["id"],
            txn.get("order_id"),
            txn["status"],
            txn["credit_card"]["unique_number_identifier"],
            txn["amount"],
            txn["created_at_s"],
            json.dumps(txn),
        ),
    )


def _settled(conn: Any, txn: dict[str, Any]) -> dict[str, Any]:
    """A submitted transaction settles once its settlement time has come (as it is read)."""
    if txn["status"] != "submitted_for_settlement":
        return txn
    due = txn["updated_at_s"] + settings().braintree_settle_s
    if time.time() < due:
        return txn
    step(txn, "settling", due)
    declined = testing.settlement_decline(Decimal(txn["amount"]))
    if declined is not None:
        step(txn, "settlement_declined", due)
        txn["processor_settlement_response_code"] = declined
    else:
        step(txn, "settled", due)
        # Disbursed the day it settled (the fee report of that day lists it).
        txn["disbursement_details"] = {
            "disbursement_date": datetime.fromtimestamp(due, UTC).date().isoformat(),
            "settlement_amount": txn["amount"],
            "settlement_currency_iso_code": txn["currency_iso_code"],
            "settlement_currency_exchange_rate": "1",
            "funds_held": False,
            "success": True,
        }
    save(conn, txn)
    create_event(store(), conn, "braintree", SETTLEMENT_KINDS[txn["status"]], {"transaction": txn})
    return txn


def settle_due(db: Store) -> int:
    """Settle every submitted transaction whose time has come (the webhook loop's tick),
    each with its notification; how many."""
    due_before = time.time() - settings().braintree_settle_s
    rows = db.query(
        "SELECT id FROM braintree_transactions WHERE status = 'submitted_for_settlement' "
        "AND json_extract(body, '$.updated_at_s') <= ?",
        (due_before,),
    )
    with db.transaction() as conn:
        for row in rows:
            load(conn, row["id"])
    return len(rows)


@bp.post("/merchants/<merchant_id>/transactions")
@with_faults("braintree", "sale")
def sale(faults: RequestFaults, merchant_id: str) -> Response:
    params = body_of().get("transaction")
    if not isinstance(params, dict):
        return invalid("Transaction is required.", "91561", "base")
    amount = amount_of(params.get("amount"))
    if amount is None:
        return invalid("Amount is an invalid format.", "81503", "amount")
    nonce = params.get("payment_method_nonce")
    fixed = testing.card_of(nonce)
    if fixed is None and not nonces.is_client_nonce(nonce):
        return invalid("Unknown or expired payment_method_nonce.", "91565", "payment_method_nonce")
    faults.slow_down()
    if faults.internal_error_before():
        return Response(status=500)
    now = time.time()
    given = params.get("options")
    options: dict[str, Any] = given if isinstance(given, dict) else {}
    order_id = params.get("order_id") if isinstance(params.get("order_id"), str) else None
    txn: dict[str, Any] = {
        "id": new_id(),
        "type": "sale",
        "amount": f"{amount:.2f}",
        "currency_iso_code": settings().braintree_currency,
        "merchant_account_id": settings().braintree_merchant_account_id,
        "order_id": order_id,
        "credit_card": {},
        "processor_response_code": "1000",
        "processor_response_text": "Approved",
        "processor_response_type": "approved",
        "gateway_rejection_reason": None,
        "refund_ids": [],
        "refunded_transaction_id": None,
        "created_at_s": now,
        "updated_at_s": now,
        "status": "",
        "status_history": [],
    }
    s = store()
    with s.transaction() as conn:
        card, was_spent = (fixed, False) if fixed is not None else nonces.spend(conn, str(nonce))
        if was_spent:
            return invalid(
                "Cannot use a payment_method_nonce more than once.", "93107", "payment_method_nonce"
            )
        if card is None:
            return invalid(
                "Unknown or expired payment_method_nonce.", "91565", "payment_method_nonce"
            )
        txn["credit_card"] = card.details()
        outcome = testing.sale_outcome(amount, card)
        if outcome.status == "authorized" and _is_duplicate(conn, txn, now):
            outcome = testing.DUPLICATE
        txn.update(outcome.fields)
        step(txn, outcome.status, now)
        if outcome.status == "authorized" and options.get("submit_for_settlement"):
            step(txn, "submitted_for_settlement", now)
        save(conn, txn)
        charged = txn["status"] in UNSETTLED
        s.record_charge(
            conn,
            "braintree",
            txn["id"],
            order_id,
            None,
            int(amount * 100),
            txn["currency_iso_code"],
            "succeeded" if charged else "failed",
        )
    if not charged:
        return faults.after_commit(invalid(outcome.message, "", "base", transaction=shown(txn)))
    return faults.after_commit(answer("transaction", shown(txn), 201))


def amount_of(raw: object) -> Decimal | None:
    try:
        amount = Decimal(str(raw))
    except InvalidOperation:
        return None
    exponent = amount.as_tuple().exponent
    if not isinstance(exponent, int) or amount <= 0 or exponent < -2:  # (not NaN or infinity)
        return None
    return amount


def _is_duplicate(conn: Any, txn: dict[str, Any], now: float) -> bool:
    """Braintree's duplicate checking: the same card and amount within the window."""
    window = settings().braintree_duplicate_window_s
    if window <= 0:
        return False
    found = conn.execute(
        "SELECT 1 FROM braintree_transactions WHERE card = ? AND amount = ? AND created >= ? "
        "AND status IN ('authorized', 'submitted_for_settlement', 'settling', 'settled') "
        "AND json_extract(body, '$.type') = 'sale'",
        (txn["credit_card"]["unique_number_identifier"], txn["amount"], now - window),
    ).fetchone()
    return found is not None


@bp.get("/merchants/<merchant_id>/transactions/<transaction_id>")
@with_faults("braintree", "find")
def find(faults: RequestFaults, merchant_id: str, transaction_id: str) -> Response:
    faults.slow_down()
    with store().transaction() as conn:
        txn = load(conn, transaction_id)
    if txn is None:
        return Response(status=404)
    return faults.after_commit(answer("transaction", shown(txn)))


@bp.post("/merchants/<merchant_id>/transactions/advanced_search_ids")
@with_faults("braintree", "search")
def search_ids(faults: RequestFaults, merchant_id: str) -> Response:
    criteria = body_of().get("search") or {}
    order = criteria.get("order_id")
    wanted = order.get("is") if isinstance(order, dict) else None
    since, until = time_range(criteria.get("created_at"))
    if wanted is None and since is None and until is None:
        return invalid("A search needs criteria.", "91733", "search")
    faults.slow_down()
    seen_before = time.time() - faults.search_lag_s()
    rows = store().query(
        "SELECT id FROM braintree_transactions WHERE (? IS NULL OR order_id = ?) "
        "AND created >= ? AND created <= ? ORDER BY created, id",
        (wanted, wanted, since or 0.0, min(until or seen_before, seen_before)),
    )
    ids = [row["id"] for row in rows]
    return faults.after_commit(answer("search-results", {"page_size": 50, "ids": ids}))


def time_range(given: object) -> tuple[float | None, float | None]:
    """A range criterion's bounds (`min`, `max`: inclusive, as Braintree's) as epoch
    seconds; an unreadable bound is no bound."""
    found: list[float | None] = []
    for end in ("min", "max"):
        raw = given.get(end) if isinstance(given, dict) else None
        try:
            moment = datetime.fromisoformat(str(raw)) if raw else None
        except ValueError:
            moment = None
        if moment is not None and moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        found.append(moment.timestamp() if moment is not None else None)
    return found[0], found[1]


@bp.post("/merchants/<merchant_id>/transactions/advanced_search")
@with_faults("braintree", "search")
def search(faults: RequestFaults, merchant_id: str) -> Response:
    criteria = body_of().get("search") or {}
    listed = criteria.get("ids")  # the SDK's `ids.in_list(...)`: an array of ids
    ids = [i for i in listed if isinstance(i, str)] if isinstance(listed, list) else []
    faults.slow_down()
    with store().transaction() as conn:
        found = [txn for txn in (load(conn, i) for i in ids[:50]) if txn is not None]
    body = render_collection("credit-card-transactions", "transaction", [shown(t) for t in found])
    return faults.after_commit(Response(body, mimetype="application/xml"))
