"""Braintree's payment-level fee report (formerly the transaction-level fee report), as
its GraphQL API hands it out: `POST /graphql` with the API keys (HTTP Basic) and
`query { report { paymentLevelFees(date: $date) { url } } }` answers the URL of a CSV
file (signed, fetched without the keys, like the storage link Braintree gives); the
file lists every transaction disbursed on that UTC date with the fee Braintree took
(a sale: the rate and the fixed fee; a refund: the rate's part given back, negative).
The transactions settle and disburse as they are read (sandbox/braintree/gateway.py),
so a report lists what has settled by the time it is asked for."""

from __future__ import annotations

import base64
import csv
import hmac
import io
import re
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from flask import Blueprint, Response, jsonify, request, url_for

from sandbox.braintree.gateway import load
from sandbox.context import RequestFaults, settings, store, with_faults

bp = Blueprint("braintree_reports", __name__)
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# The report's columns as its data dictionary names them (the ones the shop reads).
COLUMNS = (
    "Merchant Account ID",
    "Transaction ID",
    "Transaction Type",
    "Disbursement Date",
    "Settlement Currency ISO Code",
    "Settlement Amount",
    "Braintree Total Amount",
)
CENT = Decimal("0.01")


def _errors(message: str, status: int = 200) -> Response:
    """GraphQL's error answer (200 with `errors`, as Braintree's for a bad query)."""
    answer = jsonify({"data": None, "errors": [{"message": message}]})
    answer.status_code = status
    return answer


def _signature(day: str) -> str:
    key = settings().braintree_private_key.encode()
    return hmac.new(key, f"fees:{day}".encode(), "sha256").hexdigest()


@bp.post("/graphql")
@with_faults("braintree", "report")
def graphql(faults: RequestFaults) -> Response:
    config = settings()
    keys = f"{config.braintree_public_key}:{config.braintree_private_key}"
    expected = f"Basic {base64.b64encode(keys.encode()).decode()}"
    if not hmac.compare_digest(request.headers.get("Authorization", ""), expected):
        return _errors("Authentication credentials are invalid.", 401)
    body = request.get_json(silent=True)
    query = body.get("query") if isinstance(body, dict) else None
    variables = body.get("variables") if isinstance(body, dict) else None
    day = variables.get("date") if isinstance(variables, dict) else None
    field = next((f for f in ("paymentLevelFees", "transactionLevelFees") if f in str(query)), None)
    if not isinstance(query, str) or "report" not in query or field is None:
        return _errors("This sandbox answers only the fee report query.")
    if not isinstance(day, str) or not DATE_RE.match(day):
        return _errors("Variable 'date' has an invalid value: a Date (YYYY-MM-DD) is required.")
    faults.slow_down()
    if faults.internal_error_before():
        return Response(status=500)
    url = url_for(
        "braintree_reports.fee_report", day=day, signature=_signature(day), _external=True
    )
    return faults.after_commit(jsonify({"data": {"report": {field: {"url": url}}}}))


@bp.get("/braintree-reports/payment-level-fees/<day>.csv")
def fee_report(day: str) -> Response:
    given = request.args.get("signature", "")
    if not DATE_RE.match(day) or not hmac.compare_digest(given, _signature(day)):
        return Response("AccessDenied", status=403)
    s = store()
    with s.transaction() as conn:
        rows = conn.execute(
            "SELECT id FROM braintree_transactions "
            "WHERE status IN ('submitted_for_settlement', 'settled') ORDER BY created, id"
        ).fetchall()
        read = [load(conn, row["id"]) for row in rows]  # each settles as it is read, if due
    disbursed = [
        txn
        for txn in read
        if txn is not None
        and txn["status"] == "settled"
        and txn["disbursement_details"]["disbursement_date"] == day
    ]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    for txn in disbursed:
        writer.writerow(_row(txn, day))
    return Response(out.getvalue(), mimetype="text/csv")


def _row(txn: dict[str, Any], day: str) -> list[str]:
    config = settings()
    amount = Decimal(txn["amount"])
    rate = (amount * Decimal(config.braintree_fee_percent) / 100).quantize(CENT, ROUND_HALF_UP)
    # A refund: the rate's part of the sale's fee comes back; the fixed fee does not.
    fee = rate + Decimal(config.braintree_fee_fixed) / 100 if txn["type"] == "sale" else -rate
    return [
        txn["merchant_account_id"],
        txn["id"],
        txn["type"],
        day,
        txn["currency_iso_code"],
        txn["amount"],
        f"{fee:.2f}",
    ]
