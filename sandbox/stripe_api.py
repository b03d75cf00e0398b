"""The Stripe dialect: PaymentIntents with Stripe's idempotency semantics."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import time
from typing import Any

from flask import Blueprint, Response, jsonify, request

from sandbox.app import RequestFaults, settings, store, with_faults
from sandbox.events import create_event
from sandbox.store import dumps

bp = Blueprint("stripe", __name__)

# Stripe's test payment methods and what they do.
PAYMENT_METHODS: dict[str, tuple[str, str | None]] = {
    "pm_card_visa": ("succeeded", None),
    "pm_card_chargeDeclined": ("declined", "generic_decline"),
    "pm_card_chargeDeclinedInsufficientFunds": ("declined", "insufficient_funds"),
    "pm_card_authenticationRequired": ("requires_action", None),
}
SEARCH_RE = re.compile(r"^metadata\['([A-Za-z0-9_]+)'\]:'([^']*)'$")


def _error(status: int, type_: str, message: str, **extra: Any) -> Response:
    response = jsonify(error={"type": type_, "message": message, **extra})
    response.status_code = status
    return response


def _is_authorized() -> bool:
    expected = settings().stripe_secret_key
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        given = header[7:]
    elif header.startswith("Basic "):
        try:
            given = base64.b64decode(header[6:]).decode().split(":")[0]
        except (ValueError, UnicodeDecodeError):
            return False
    else:
        return False
    return hmac.compare_digest(given, expected)


@bp.before_request
def require_api_key() -> Response | None:
    if not _is_authorized():
        return _error(401, "invalid_request_error", "Invalid API Key provided.")
    return None


def _intent_json(row: Any) -> dict[str, Any]:
    return {
        "id": row["id"],
        "object": "payment_intent",
        "amount": row["amount"],
        "currency": row["currency"],
        "status": row["status"],
        "payment_method": row["payment_method"],
        "metadata": json.loads(row["metadata"]),
        "last_payment_error": json.loads(row["last_payment_error"] or "null"),
        "created": row["created"],
        "livemode": False,
    }


def _parse_create() -> tuple[dict[str, Any], Response | None]:
    form = request.form
    metadata = {m.group(1): v for k, v in form.items() if (m := re.match(r"metadata\[(\w+)\]$", k))}
    amount = form.get("amount", "")
    if not amount.isdigit() or int(amount) < 1:
        return {}, _error(400, "invalid_request_error", "Invalid integer: amount", param="amount")
    currency = form.get("currency", "")
    if not re.fullmatch(r"[a-z]{3}", currency):
        return {}, _error(400, "invalid_request_error", "Invalid currency", param="currency")
    if form.get("confirm") != "true":
        return {}, _error(
            400, "invalid_request_error", "The sandbox only supports confirm=true", param="confirm"
        )
    method = form.get("payment_method", "")
    if method not in PAYMENT_METHODS:
        return {}, _error(
            400,
            "invalid_request_error",
            f"No such PaymentMethod: '{method}'",
            param="payment_method",
            code="resource_missing",
        )
    return {
        "amount": int(amount),
        "currency": currency,
        "payment_method": method,
        "metadata": metadata,
    }, None


def _claim_key(key: str, params_hash: str) -> Response | None:
    """Stripe's idempotency layer. None: this request owns the key; else the answer to send."""
    lifetime_s = settings().key_lifetime_s
    with store().transaction() as conn:
        conn.execute(
            "DELETE FROM idempotency_keys WHERE key = ? AND created < ?",
            (key, time.time() - lifetime_s),
        )
        row = conn.execute("SELECT * FROM idempotency_keys WHERE key = ?", (key,)).fetchone()
        if row is None:
            conn.execute(
                "INSERT INTO idempotency_keys (key, params_hash, state, created) "
                "VALUES (?, ?, 'in_flight', ?)",
                (key, params_hash, time.time()),
            )
            return None
    if row["params_hash"] != params_hash:
        return _error(
            400,
            "idempotency_error",
            "Keys for idempotent requests can only be used with the same parameters "
            "they were first used with.",
        )
    if row["state"] == "in_flight":
        response = _error(
            409,
            "idempotency_error",
            "There is currently another in-progress request using this Idempotent Key.",
            code="idempotency_key_in_use",
        )
        response.headers["Stripe-Should-Retry"] = "true"
        return response
    response = Response(row["body"], status=row["status_code"], mimetype="application/json")
    response.headers["Idempotent-Replayed"] = "true"
    response.headers["Original-Request"] = key
    return response


def _store_result(key: str | None, response: Response) -> None:
    if key:
        with store().transaction() as conn:
            conn.execute(
                "UPDATE idempotency_keys SET state = 'done', status_code = ?, body = ? "
                "WHERE key = ?",
                (response.status_code, response.get_data(as_text=True), key),
            )


def _release_key(key: str | None) -> None:
    if key:
        with store().transaction() as conn:
            conn.execute(
                "DELETE FROM idempotency_keys WHERE key = ? AND state = 'in_flight'", (key,)
            )


@bp.post("/v1/payment_intents")
@with_faults("stripe", "create")
def create_payment_intent(faults: RequestFaults) -> Response:
    params, invalid = _parse_create()
    if invalid is not None:
        return invalid  # validation failures are not stored under the key (as Stripe)
    key = request.headers.get("Idempotency-Key") or None
    if key:
        params_hash = hashlib.sha256(dumps(sorted(request.form.items(multi=True))).encode())
        answer = _claim_key(key, params_hash.hexdigest())
        if answer is not None:
            faults.slow_down()
            return faults.after_commit(answer)
    try:
        faults.slow_down()
        if faults.internal_error_before():
            response = _error(500, "api_error", "sandbox injected 500 before processing")
        else:
            response = _charge(params)
    except BaseException:
        _release_key(key)
        raise
    _store_result(key, response)  # committed: a replay returns exactly this answer
    return faults.after_commit(response)


def _charge(params: dict[str, Any]) -> Response:
    outcome, decline_code = PAYMENT_METHODS[params["payment_method"]]
    intent_id = "pi_" + secrets.token_hex(12)
    status = {
        "succeeded": "succeeded",
        "declined": "requires_payment_method",
        "requires_action": "requires_action",
    }[outcome]
    error: dict[str, str] | None = None
    if outcome == "declined" and decline_code:
        error = {
            "type": "card_error",
            "code": "card_declined",
            "decline_code": decline_code,
            "message": "Your card was declined.",
        }
    metadata = params["metadata"]
    s = store()
    with s.transaction() as conn:
        conn.execute(
            "INSERT INTO payment_intents (id, amount, currency, status, payment_method, "
            "metadata, last_payment_error, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                intent_id,
                params["amount"],
                params["currency"],
                status,
                params["payment_method"],
                json.dumps(metadata),
                json.dumps(error) if error else None,
                int(time.time()),
            ),
        )
        row = conn.execute("SELECT * FROM payment_intents WHERE id = ?", (intent_id,)).fetchone()
        intent = _intent_json(row)
        if outcome != "requires_action":
            s.record_charge(
                conn,
                "stripe",
                intent_id,
                metadata.get("payment_id"),
                metadata.get("order_id"),
                params["amount"],
                params["currency"],
                "succeeded" if outcome == "succeeded" else "failed",
            )
            create_event(
                s,
                conn,
                "stripe",
                "payment_intent.succeeded"
                if outcome == "succeeded"
                else "payment_intent.payment_failed",
                intent,
            )
    if error:
        return _error(
            402,
            "card_error",
            error["message"],
            code="card_declined",
            decline_code=decline_code,
            payment_intent=intent,
        )
    return jsonify(intent)


@bp.get("/v1/payment_intents/<intent_id>")
@with_faults("stripe", "retrieve")
def retrieve_payment_intent(faults: RequestFaults, intent_id: str) -> Response:
    faults.slow_down()
    rows = store().query("SELECT * FROM payment_intents WHERE id = ?", (intent_id,))
    if not rows:
        return _error(
            404,
            "invalid_request_error",
            f"No such payment_intent: '{intent_id}'",
            code="resource_missing",
        )
    return faults.after_commit(jsonify(_intent_json(rows[0])))


@bp.get("/v1/payment_intents/search")
@with_faults("stripe", "search")
def search_payment_intents(faults: RequestFaults) -> Response:
    match = SEARCH_RE.match(request.args.get("query", ""))
    if not match:
        return _error(
            400,
            "invalid_request_error",
            "The sandbox supports queries of the form metadata['key']:'value'",
            param="query",
        )
    faults.slow_down()
    rows = store().query(
        "SELECT * FROM payment_intents WHERE json_extract(metadata, ?) = ? ORDER BY created",
        (f"$.{match.group(1)}", match.group(2)),
    )
    return faults.after_commit(
        jsonify(
            object="search_result",
            url="/v1/payment_intents/search",
            has_more=False,
            data=[_intent_json(r) for r in rows],
        )
    )


@bp.get("/v1/events")
@with_faults("stripe", "events")
def list_events(faults: RequestFaults) -> Response:
    sql = "SELECT body FROM events WHERE dialect = 'stripe'"
    if request.args.get("delivery_success") == "false":
        sql += " AND delivered_at IS NULL"
    elif request.args.get("delivery_success") == "true":
        sql += " AND delivered_at IS NOT NULL"
    rows = store().query(sql + " ORDER BY created DESC, rowid DESC LIMIT 100")
    return jsonify(
        object="list", url="/v1/events", has_more=False, data=[json.loads(r["body"]) for r in rows]
    )
