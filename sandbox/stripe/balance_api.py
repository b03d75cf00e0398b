"""Stripe's balance, read: `GET /v1/balance` (what the account holds, per currency),
`GET /v1/balance_transactions` (`created`, `currency`,
`payout`, `source`, `type`, cursors, `expand[]=data.source`) and `GET /v1/payouts`
(`created`, `status`, cursors), with their retrieves, and a PaymentIntent's
`expand[]=latest_charge.balance_transaction`; what they read is written by
sandbox/stripe/balance.py."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from flask import Response, jsonify, request

from sandbox.context import RequestFaults, store, with_faults
from sandbox.stripe import balance
from sandbox.stripe import params as params_of
from sandbox.stripe.blueprint import bp
from sandbox.stripe.idempotency import stripe_error
from sandbox.stripe.lists import page
from sandbox.stripe.objects import list_object

TYPES = (
    "adjustment",
    "charge",
    "payment",
    "payout",
    "payout_cancel",
    "payout_failure",
    "refund",
    "refund_failure",
    "stripe_fee",
)
BALANCE_LIST = frozenset(
    {"created", "currency", "ending_before", "expand", "limit", "payout", "source"}
    | {"starting_after", "type"}
)
PAYOUT_LIST = frozenset(
    {"arrival_date", "created", "destination", "ending_before", "expand", "limit"}
    | {"starting_after", "status"}
)
PAYOUT_STATUSES = ("paid", "pending", "in_transit", "canceled", "failed")
PAYOUT_CREATE = frozenset({"amount", "currency", "description", "metadata", "method"})


def _txn(row: sqlite3.Row, now: float) -> dict[str, Any]:
    txn = dict(json.loads(row["body"]))
    txn["status"] = "available" if row["available_on"] <= now else "pending"
    return txn


def charge_object(
    conn: sqlite3.Connection, charge_id: str, *, with_balance: bool = False
) -> dict[str, Any] | None:
    """A succeeded charge as Stripe's Charge object (the fields read here), from its
    PaymentIntent and its balance transaction (`with_balance`: that object, expanded)."""
    row = conn.execute(
        "SELECT body FROM payment_intents WHERE json_extract(body, '$.latest_charge') = ?",
        (charge_id,),
    ).fetchone()
    if row is None:
        return None
    intent = json.loads(row["body"])
    found = conn.execute(
        "SELECT * FROM balance_transactions WHERE source = ? AND type = 'charge'", (charge_id,)
    ).fetchone()
    txn = _txn(found, time.time()) if found is not None else None
    return {
        "id": charge_id,
        "object": "charge",
        "amount": intent["amount"],
        "amount_captured": intent.get("amount_received", intent["amount"]),
        "balance_transaction": (txn if with_balance else txn["id"]) if txn else None,
        "captured": True,
        "created": intent.get("created"),
        "currency": intent["currency"],
        "livemode": False,
        "metadata": intent.get("metadata", {}),
        "paid": True,
        "payment_intent": intent["id"],
        "status": "succeeded",
    }


# A PaymentIntent answer's latest charge, expanded (`expand[]=latest_charge`, and with its
# balance transaction `expand[]=latest_charge.balance_transaction`; `data.` on lists).
CHARGE_EXPANSIONS = {
    "latest_charge": False,
    "data.latest_charge": False,
    "latest_charge.balance_transaction": True,
    "data.latest_charge.balance_transaction": True,
}


@bp.after_request
def expand_latest_charge(response: Response) -> Response:
    wanted = {
        value
        for source in (request.args, request.form)
        for key, value in source.items(multi=True)
        if key == "expand" or key.startswith("expand[")
    } & set(CHARGE_EXPANSIONS)
    if not wanted or not response.is_json:
        return response
    body = response.get_json(silent=True)
    if not isinstance(body, dict):
        return response
    with_balance = any(CHARGE_EXPANSIONS[name] for name in wanted)
    data = body.get("data")
    conn = store().connection()
    for intent in data if isinstance(data, list) else [body]:
        charge = intent.get("latest_charge") if isinstance(intent, dict) else None
        if isinstance(charge, str) and intent.get("object") == "payment_intent":
            intent["latest_charge"] = (
                charge_object(conn, charge, with_balance=with_balance) or charge
            )
    response.set_data(json.dumps(body))
    return response


def _source_object(conn: sqlite3.Connection, txn: dict[str, Any]) -> dict[str, Any] | str:
    """`expand[]=data.source`: the charge, refund, dispute or payout the money moved for."""
    source = str(txn["source"])
    if source.startswith("ch_"):
        return charge_object(conn, source) or source
    for table in ("refunds", "disputes", "payouts"):
        row = conn.execute(f"SELECT body FROM {table} WHERE id = ?", (source,)).fetchone()
        if row is not None:
            return dict(json.loads(row["body"]))
    return source


def _expanded(query: dict[str, Any]) -> bool:
    wanted = query.get("expand") or []
    return "data.source" in (wanted if isinstance(wanted, list) else [wanted])


@bp.get("/v1/balance_transactions")
@with_faults("stripe", "balance_transactions")
def list_balance_transactions(faults: RequestFaults) -> Response:
    query = params_of.decode(request.args.items(multi=True), BALANCE_LIST)
    where, bounds = params_of.created_bounds(query)
    args: tuple[object, ...] = bounds
    for name in ("currency", "payout", "source", "type"):
        value = query.get(name)
        if value is None:
            continue
        if not isinstance(value, str) or (name == "type" and value not in TYPES):
            raise params_of.ParamError(f"Invalid {name}: {str(value)[:60]}", name)
        where, args = f"{where} AND {name} = ?", (*args, value.lower())
    faults.slow_down()
    conn = store().connection()
    payout = query.get("payout")
    if payout is not None and _is_manual(conn, str(payout)):
        return faults.after_commit(
            stripe_error(
                400,
                "invalid_request_error",
                "Balance transaction history can only be filtered on automatic transfers, "
                "not manual.",
                param="payout",
            )
        )
    rows, has_more = page(
        conn,
        "balance_transactions",
        where,
        args,
        starting_after=query.get("starting_after"),
        ending_before=query.get("ending_before"),
        limit=params_of.limit(query),
        what="balance_transaction",
    )
    now = time.time()
    data = [_txn(row, now) for row in rows]
    if _expanded(query):
        for txn in data:
            txn["source"] = _source_object(conn, txn)
    body = list_object("/v1/balance_transactions", data, has_more)
    return faults.after_commit(jsonify(body))


@bp.get("/v1/balance_transactions/<txn_id>")
@with_faults("stripe", "balance_transaction")
def retrieve_balance_transaction(faults: RequestFaults, txn_id: str) -> Response:
    faults.slow_down()
    rows = store().query("SELECT * FROM balance_transactions WHERE id = ?", (txn_id,))
    if not rows:
        return faults.after_commit(_missing("balance_transaction", txn_id))
    return faults.after_commit(jsonify(_txn(rows[0], time.time())))


@bp.get("/v1/balance")
@with_faults("stripe", "balance")
def retrieve_balance(faults: RequestFaults) -> Response:
    """The account's balance: per currency, the net of every balance transaction,
    `available` once its `available_on` has come, `pending` before."""
    faults.slow_down()
    now = time.time()
    rows = store().query(
        "SELECT currency, SUM(CASE WHEN available_on <= ? THEN net ELSE 0 END) AS available, "
        "SUM(CASE WHEN available_on > ? THEN net ELSE 0 END) AS pending "
        "FROM balance_transactions GROUP BY currency ORDER BY currency",
        (now, now),
    )

    def funds(part: str) -> list[dict[str, Any]]:
        return [
            {
                "amount": int(row[part]),
                "currency": row["currency"],
                "source_types": {"card": int(row[part])},
            }
            for row in rows
        ]

    body = {
        "object": "balance",
        "available": funds("available"),
        "livemode": False,
        "pending": funds("pending"),
    }
    return faults.after_commit(jsonify(body))


def _is_manual(conn: sqlite3.Connection, payout_id: str) -> bool:
    row = conn.execute("SELECT body FROM payouts WHERE id = ?", (payout_id,)).fetchone()
    return row is not None and json.loads(row["body"]).get("automatic") is False


@bp.post("/v1/payouts")
@with_faults("stripe", "payouts")
def create_payout(faults: RequestFaults) -> Response:
    """A manual payout of `amount` in `currency` from the available balance (400
    `balance_insufficient` when it has less)."""
    form = params_of.decode(request.form.items(multi=True), PAYOUT_CREATE)
    amount, currency = form.get("amount"), str(form.get("currency", "")).lower()
    if not isinstance(amount, str) or not amount.isdigit() or int(amount) <= 0:
        raise params_of.ParamError("Invalid positive integer", "amount")
    faults.slow_down()
    with store().transaction() as conn:
        if int(amount) > balance.available(conn, currency, time.time()):
            return faults.after_commit(
                stripe_error(
                    400,
                    "invalid_request_error",
                    "You have insufficient funds in your Stripe account for this transfer.",
                    code="balance_insufficient",
                )
            )
        payout = balance.manual_payout(conn, int(amount), currency)
    return faults.after_commit(jsonify(payout))


@bp.get("/v1/payouts")
@with_faults("stripe", "payouts")
def list_payouts(faults: RequestFaults) -> Response:
    query = params_of.decode(request.args.items(multi=True), PAYOUT_LIST)
    where, args = params_of.created_bounds(query)
    status = query.get("status")
    if status is not None:
        if status not in PAYOUT_STATUSES:
            raise params_of.ParamError(f"Invalid status: {str(status)[:40]}", "status")
        where, args = f"{where} AND status = ?", (*args, status)
    faults.slow_down()
    rows, has_more = page(
        store().connection(),
        "payouts",
        where,
        args,
        starting_after=query.get("starting_after"),
        ending_before=query.get("ending_before"),
        limit=params_of.limit(query),
        what="payout",
    )
    data = [json.loads(row["body"]) for row in rows]
    return faults.after_commit(jsonify(list_object("/v1/payouts", data, has_more)))


@bp.get("/v1/payouts/<payout_id>")
@with_faults("stripe", "payout")
def retrieve_payout(faults: RequestFaults, payout_id: str) -> Response:
    faults.slow_down()
    rows = store().query("SELECT body FROM payouts WHERE id = ?", (payout_id,))
    if not rows:
        return faults.after_commit(_missing("payout", payout_id))
    return faults.after_commit(jsonify(json.loads(rows[0]["body"])))


def _missing(what: str, object_id: str) -> Response:
    return stripe_error(
        404,
        "invalid_request_error",
        f"No such {what}: '{object_id}'",
        code="resource_missing",
        param="id",
    )
