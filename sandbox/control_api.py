"""/_sandbox/: the control API for tests, drills and people (faults, ledger, request log)."""

from __future__ import annotations

import json
import time

from flask import Blueprint, Response, jsonify, request

from sandbox.braintree.disputes import open_dispute
from sandbox.context import settings, store
from sandbox.faults import FAULT_KINDS, FaultError, add_fault, clear_faults, list_faults
from sandbox.stripe import balance
from sandbox.stripe.objects import new_id, new_intent
from sandbox.stripe.params import ParamError
from sandbox.stripe.refunds import dashboard_refund, settle_due

bp = Blueprint("control", __name__)


@bp.get("/health")
def health() -> Response:
    return jsonify(status="ok")


@bp.get("/faults")
def get_faults() -> Response:
    return jsonify(
        data=list_faults(store()),
        kinds={
            kind: {"params": params, "description": text}
            for kind, (params, text) in FAULT_KINDS.items()
        },
    )


@bp.post("/faults")
def post_fault() -> Response | tuple[Response, int]:
    spec = request.get_json(silent=True)
    if not isinstance(spec, dict):
        return jsonify(error="the body must be a JSON object describing a fault"), 400
    try:
        fault_id = add_fault(store(), spec)
    except FaultError as exc:
        return jsonify(error=str(exc)), 400
    if spec["kind"] == "refuse":
        # Applied at once: the listening socket closes for N seconds.
        settings().refuse(float(spec.get("seconds", FAULT_KINDS["refuse"][0]["seconds"])))
    return jsonify(id=fault_id), 201


@bp.delete("/faults")
def delete_faults() -> Response:
    clear_faults(store())
    return jsonify(status="cleared")


@bp.delete("/faults/<int:fault_id>")
def delete_fault(fault_id: int) -> Response:
    clear_faults(store(), fault_id)
    return jsonify(status="cleared")


@bp.get("/charges")
def charges() -> Response:
    """The ledger of real money movement, and the orders charged more than once."""
    sql, args = "SELECT * FROM charges WHERE 1=1", []
    for column in ("payment_ref", "order_ref", "dialect", "status"):
        if request.args.get(column):
            sql += f" AND {column} = ?"
            args.append(request.args[column])
    rows = [dict(r) for r in store().query(sql + " ORDER BY id", tuple(args))]
    doubles = store().query(
        "SELECT dialect, order_ref, COUNT(*) AS n FROM charges WHERE status = 'succeeded' "
        "AND order_ref IS NOT NULL GROUP BY dialect, order_ref HAVING COUNT(*) > 1"
    )
    double_payments = store().query(
        "SELECT dialect, payment_ref, COUNT(*) AS n FROM charges WHERE status = 'succeeded' "
        "AND payment_ref IS NOT NULL GROUP BY dialect, payment_ref HAVING COUNT(*) > 1"
    )
    return jsonify(
        data=rows,
        double_charged_orders=[dict(r) for r in doubles],
        double_charged_payments=[dict(r) for r in double_payments],
    )


@bp.get("/refunds")
def refunds() -> Response:
    """The refunds made (both dialects), and every payment refunded beyond what it took."""
    sql, args = "SELECT * FROM refunds WHERE 1 = 1", []
    for column in ("dialect", "payment_ref", "refund_ref", "status"):
        if request.args.get(column):
            sql += f" AND {column} = ?"
            args.append(request.args[column])
    rows = [
        {k: v for k, v in dict(r).items() if k != "body"}
        for r in store().query(sql + " ORDER BY created", tuple(args))
    ]
    over = store().query(
        "SELECT r.dialect, r.payment_object_id, SUM(r.amount) AS refunded, "
        "MAX(c.amount) AS charged FROM refunds r JOIN charges c "
        "ON c.object_id = r.payment_object_id AND c.status = 'succeeded' "
        "WHERE r.status NOT IN ('failed', 'canceled', 'declined') "
        "GROUP BY r.dialect, r.payment_object_id HAVING SUM(r.amount) > MAX(c.amount)"
    )
    return jsonify(data=rows, over_refunded=[dict(r) for r in over])


@bp.post("/refunds/settle")
def settle_refunds() -> Response:
    """Give every refund with a later outcome (Stripe's pending and failing refund test
    cards) that outcome now, with its events."""
    return jsonify(settled=settle_due(store(), is_forced=True))


@bp.post("/stripe/dashboard_refunds")
def stripe_dashboard_refund() -> tuple[Response, int]:
    """A refund "made in Stripe's Dashboard" (`{"payment_intent", "amount"?}`): no
    metadata of ours, the usual events. 201 with the refund; 400 as Stripe would refuse."""
    body = request.get_json(silent=True) or {}
    amount = body.get("amount")
    if not isinstance(body.get("payment_intent"), str) or not (
        amount is None or (isinstance(amount, int) and not isinstance(amount, bool))
    ):
        return jsonify(error="payment_intent (string) and an optional integer amount"), 400
    try:
        refund = dashboard_refund(body["payment_intent"], amount)
    except ParamError as exc:
        return jsonify(error=str(exc)), 400
    return jsonify(refund), 201


@bp.post("/stripe/busy")
def stripe_busy() -> tuple[Response, int]:
    """A busy shop's other PaymentIntents, made now (`{"count"}`, at most 10,000): created
    and never confirmed, with no metadata of anyone's, as other checkouts leave them."""
    count = (request.get_json(silent=True) or {}).get("count")
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 10_000:
        return jsonify(error="count: an integer from 1 to 10000"), 400
    intents = [
        new_intent({"amount": 1000, "currency": "eur", "metadata": {}}) for _ in range(count)
    ]
    with store().transaction() as conn:
        conn.executemany(
            "INSERT INTO payment_intents (id, amount, currency, status, payment_method, "
            "metadata, created, body) VALUES (?, ?, ?, ?, NULL, '{}', ?, ?)",
            [
                (i["id"], i["amount"], i["currency"], i["status"], i["created"], json.dumps(i))
                for i in intents
            ],
        )
    return jsonify(count=count), 201


@bp.post("/stripe/payouts")
def stripe_payouts() -> tuple[Response, int]:
    """Pay the available balance out now, as Stripe's automatic payout does
    (`{"fail": true}`: the bank refuses it and the money comes back). 201 with them."""
    is_failing = (request.get_json(silent=True) or {}).get("fail") is True
    return jsonify(data=balance.run_payouts(store(), is_failing=is_failing)), 201


@bp.post("/stripe/charges")
def stripe_charges() -> tuple[Response, int]:
    """A busy day of succeeded charges, made now (`{"count", "amount"}`: up to 100,000 of
    `amount` EUR minor units, no metadata): each PaymentIntent with its charge's balance
    transaction and fee, as confirmed ones leave them, without their events. For
    benchmarks of the reconciliation; 201 with the PaymentIntents' ids, in order."""
    body = request.get_json(silent=True) or {}
    count, amount = body.get("count"), body.get("amount", 1000)
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 100_000:
        return jsonify(error="count: an integer from 1 to 100000"), 400
    if not isinstance(amount, int) or isinstance(amount, bool) or not 50 <= amount <= 10**8:
        return jsonify(error="amount: minor units, 50 or more"), 400
    ids = []
    with store().transaction() as conn:
        for _ in range(count):
            intent = new_intent({"amount": amount, "currency": "eur", "metadata": {}})
            intent.update(
                status="succeeded",
                amount_received=amount,
                latest_charge=new_id("ch"),
                payment_method="pm_card_visa",
            )
            conn.execute(
                "INSERT INTO payment_intents (id, amount, currency, status, payment_method, "
                "metadata, created, body) VALUES (?, ?, 'eur', 'succeeded', 'pm_card_visa', "
                "'{}', ?, ?)",
                (intent["id"], amount, intent["created"], json.dumps(intent)),
            )
            fee = balance.card_fee(amount)
            balance.record(conn, "charge", intent["latest_charge"], amount, "eur", fee=fee)
            ids.append(intent["id"])
    return jsonify(data=ids), 201


@bp.post("/stripe/fee_adjustments")
def stripe_fee_adjustment() -> tuple[Response, int]:
    """A fee the shop did not expect (`{"amount", "currency"}`, minor units taken from the
    balance): an `adjustment` of Stripe's, as its corrections of past fees come."""
    body = request.get_json(silent=True) or {}
    amount, currency = body.get("amount"), body.get("currency")
    if not isinstance(amount, int) or isinstance(amount, bool) or not 1 <= amount <= 10**9:
        return jsonify(error="amount: minor units, 1 or more"), 400
    if not isinstance(currency, str) or len(currency) != 3 or not currency.isalpha():
        return jsonify(error="currency: a three-letter code"), 400
    with store().transaction() as conn:
        txn = balance.record(
            conn,
            "adjustment",
            new_id("fadj"),
            -amount,
            currency,
            category="fee",
            description="Fee adjustment",
        )
    return jsonify(txn), 201


@bp.post("/stripe/balance/age")
def age_balance() -> Response | tuple[Response, int]:
    """Every balance transaction and payout becomes `seconds` older (created, available_on,
    arrival_date): days pass for drills and tests without their waiting."""
    seconds = (request.get_json(silent=True) or {}).get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 0:
        return jsonify(error="seconds: a whole number of seconds, 0 or more"), 400
    with store().transaction() as conn:
        aged = conn.execute(
            "UPDATE balance_transactions SET created = created - :s, available_on = "
            "available_on - :s, body = json_set(body, '$.created', created - :s, "
            "'$.available_on', available_on - :s)",
            {"s": seconds},
        ).rowcount
        conn.execute(
            "UPDATE payouts SET created = created - :s, arrival_date = arrival_date - :s, "
            "body = json_set(body, '$.created', created - :s, '$.arrival_date', "
            "arrival_date - :s)",
            {"s": seconds},
        )
    return jsonify(aged=aged)


@bp.post("/braintree/age")
def age_braintree() -> Response | tuple[Response, int]:
    """Every Braintree transaction becomes `seconds` older (created, updated, each status
    of its history): its settlement comes, its duplicate window passes, without waiting."""
    seconds = (request.get_json(silent=True) or {}).get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
        return jsonify(error="seconds: a number of seconds, 0 or more"), 400
    with store().transaction() as conn:
        rows = conn.execute("SELECT id, body FROM braintree_transactions").fetchall()
        for row in rows:
            txn = json.loads(row["body"])
            for key in ("created_at_s", "updated_at_s"):
                txn[key] -= seconds
            for event in txn["status_history"]:
                event["timestamp_s"] -= seconds
            conn.execute(
                "UPDATE braintree_transactions SET created = ?, body = ? WHERE id = ?",
                (txn["created_at_s"], json.dumps(txn), row["id"]),
            )
    return jsonify(aged=len(rows))


@bp.post("/braintree/disputes")
def braintree_dispute() -> Response | tuple[Response, int]:
    """A cardholder's bank disputes a settled Braintree sale (`{"transaction_id"}`): a
    chargeback of its whole amount, `dispute_opened` sent. 201 with the dispute."""
    transaction_id = (request.get_json(silent=True) or {}).get("transaction_id")
    if not isinstance(transaction_id, str):
        return jsonify(error="transaction_id: a Braintree transaction's id"), 400
    with store().transaction() as conn:
        dispute = open_dispute(conn, transaction_id)
    if dispute is None:
        return jsonify(error=f"no settled sale {transaction_id[:40]}"), 404
    return jsonify(
        id=dispute["id"],
        status=dispute["status"],
        amount=dispute["amount"],
        transaction_id=transaction_id,
    ), 201


@bp.get("/requests")
def requests_log() -> Response:
    """Requests received, optionally since a unix time and for one dialect/endpoint."""
    sql, args = "SELECT * FROM requests WHERE at >= ?", [request.args.get("since", "0")]
    for column in ("dialect", "endpoint"):
        if request.args.get(column):
            sql += f" AND {column} = ?"
            args.append(request.args[column])
    rows = [dict(r) for r in store().query(sql + " ORDER BY id", tuple(args))]
    return jsonify(count=len(rows), data=rows, now=time.time())


@bp.get("/events")
def events() -> Response:
    rows = store().query(
        "SELECT id, dialect, type, created, copies, attempts, delivered_at, "
        "is_dropped FROM events ORDER BY rowid"
    )
    return jsonify(data=[dict(r) for r in rows])


@bp.post("/keys/age")
def age_keys() -> Response | tuple[Response, int]:
    """Every stored idempotency key becomes `seconds` older: a key's lifetime passes for
    tests and drills without their waiting through it."""
    seconds = (request.get_json(silent=True) or {}).get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
        return jsonify(error="seconds: a number of seconds, 0 or more"), 400
    with store().transaction() as conn:
        aged = conn.execute(
            "UPDATE idempotency_keys SET created = created - ?", (float(seconds),)
        ).rowcount
    return jsonify(aged=aged)


@bp.post("/reset")
def reset() -> Response:
    store().reset()
    return jsonify(status="reset")
