"""The acquirer dialect: a bank gateway with NO idempotency keys. A repeated POST charges again."""

from __future__ import annotations

import hmac
import json
import secrets
import time
from typing import Any

from flask import Blueprint, Response, jsonify, request

from sandbox.context import RequestFaults, settings, store, with_faults
from sandbox.events import create_event

bp = Blueprint("acquirer", __name__)

CARDS = {
    "card_ok": None,
    "card_declined": "do_not_honour",
    "card_insufficient_funds": "insufficient_funds",
}


def _error(status: int, code: str, message: str) -> Response:
    response = jsonify(error={"code": code, "message": message})
    response.status_code = status
    return response


@bp.before_request
def require_api_key() -> Response | None:
    given = request.headers.get("X-Api-Key", "")
    if not hmac.compare_digest(given, settings().acquirer_api_key):
        return _error(401, "unauthorized", "missing or wrong X-Api-Key")
    return None


def _payment_json(row: Any) -> dict[str, Any]:
    return {
        key: row[key]
        for key in ("id", "reference", "amount", "currency", "status", "decline_reason", "created")
    }


@bp.post("/payments")
@with_faults("acquirer", "create")
def create_payment(faults: RequestFaults) -> Response:
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return _error(400, "invalid_json", "the body must be a JSON object")
    reference, amount = body.get("reference"), body.get("amount")
    currency, card = body.get("currency"), body.get("card")
    if not isinstance(reference, str) or not reference:
        return _error(400, "invalid_reference", "reference must be a non-empty string")
    if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
        return _error(400, "invalid_amount", "amount must be a positive integer")
    if not isinstance(currency, str) or len(currency) != 3:
        return _error(400, "invalid_currency", "currency must be an ISO 4217 code")
    if not isinstance(card, str) or card not in CARDS:
        return _error(400, "invalid_card", f"card must be one of {', '.join(CARDS)}")
    faults.slow_down()
    if faults.internal_error_before():
        return _error(500, "internal_error", "sandbox injected 500 before processing")
    decline_reason = CARDS[card]
    payment_id = "acq_" + secrets.token_hex(10)
    s = store()
    with s.transaction() as conn:
        conn.execute(
            "INSERT INTO acquirer_payments (id, reference, amount, currency, status, "
            "decline_reason, created) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                payment_id,
                reference,
                amount,
                currency.upper(),
                "declined" if decline_reason else "approved",
                decline_reason,
                int(time.time()),
            ),
        )
        row = conn.execute("SELECT * FROM acquirer_payments WHERE id = ?", (payment_id,)).fetchone()
        payment = _payment_json(row)
        order_ref = body.get("order_reference")
        s.record_charge(
            conn,
            "acquirer",
            payment_id,
            reference,
            str(order_ref) if order_ref is not None else None,
            amount,
            currency.upper(),
            "failed" if decline_reason else "succeeded",
        )
        create_event(
            s,
            conn,
            "acquirer",
            "payment.declined" if decline_reason else "payment.approved",
            payment,
        )
    response = jsonify(payment)
    response.status_code = 201
    return faults.after_commit(response)


@bp.get("/payments/<payment_id>")
@with_faults("acquirer", "retrieve")
def retrieve_payment(faults: RequestFaults, payment_id: str) -> Response:
    faults.slow_down()
    rows = store().query("SELECT * FROM acquirer_payments WHERE id = ?", (payment_id,))
    if not rows:
        return _error(404, "not_found", f"no payment {payment_id}")
    return faults.after_commit(jsonify(_payment_json(rows[0])))


@bp.get("/payments")
@with_faults("acquirer", "search")
def find_payments(faults: RequestFaults) -> Response:
    reference = request.args.get("reference")
    if not reference:
        return _error(400, "invalid_reference", "the reference query parameter is required")
    faults.slow_down()
    rows = store().query(
        "SELECT * FROM acquirer_payments WHERE reference = ? ORDER BY created", (reference,)
    )
    return faults.after_commit(jsonify(data=[_payment_json(r) for r in rows]))


@bp.get("/events")
def list_events() -> Response:
    sql = "SELECT body FROM events WHERE dialect = 'acquirer'"
    if request.args.get("delivered") == "false":
        sql += " AND delivered_at IS NULL"
    rows = store().query(sql + " ORDER BY created DESC, rowid DESC LIMIT 100")
    return jsonify(data=[json.loads(r["body"]) for r in rows])


def _refund_json(row: Any) -> dict[str, Any]:
    return dict(json.loads(row["body"]))


@bp.post("/payments/<payment_id>/refunds")
@with_faults("acquirer", "refund")
def create_refund(faults: RequestFaults, payment_id: str) -> Response:
    """Refund (part of) an approved payment. No idempotency keys: every POST refunds."""
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return _error(400, "invalid_json", "the body must be a JSON object")
    reference, amount = body.get("reference"), body.get("amount")
    if not isinstance(reference, str) or not reference:
        return _error(400, "invalid_reference", "reference must be a non-empty string")
    if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
        return _error(400, "invalid_amount", "amount must be a positive integer")
    faults.slow_down()
    if faults.internal_error_before():
        return _error(500, "internal_error", "sandbox injected 500 before processing")
    s = store()
    with s.transaction() as conn:
        payment = conn.execute(
            "SELECT * FROM acquirer_payments WHERE id = ?", (payment_id,)
        ).fetchone()
        if payment is None:
            return _error(404, "not_found", f"no payment {payment_id}")
        if payment["status"] != "approved":
            return _error(409, "not_refundable", f"payment {payment_id} is {payment['status']}")
        remaining = payment["amount"] - s.refunded(conn, payment_id)
        if amount > remaining:
            return _error(409, "amount_exceeds_remaining", f"at most {remaining} can be refunded")
        refund = {
            "id": "acqr_" + secrets.token_hex(10),
            "payment_id": payment_id,
            "reference": reference,
            "amount": amount,
            "currency": payment["currency"],
            "status": "approved",
            "decline_reason": None,
            "created": int(time.time()),
        }
        s.record_refund(
            conn,
            "acquirer",
            {
                **refund,
                "_payment": payment_id,
                "_payment_ref": payment["reference"],
                "_refund_ref": reference,
            },
        )
        create_event(s, conn, "acquirer", "refund.approved", refund)
    response = jsonify(refund)
    response.status_code = 201
    return faults.after_commit(response)


@bp.get("/refunds")
@with_faults("acquirer", "search_refunds")
def find_refunds(faults: RequestFaults) -> Response:
    reference = request.args.get("reference")
    if not reference:
        return _error(400, "invalid_reference", "the reference query parameter is required")
    faults.slow_down()
    rows = store().query(
        "SELECT body FROM refunds WHERE dialect = 'acquirer' AND refund_ref = ? ORDER BY created",
        (reference,),
    )
    return faults.after_commit(jsonify(data=[_refund_json(r) for r in rows]))
