"""The Stripe dialect: PaymentIntents (create, retrieve, update, confirm, cancel, capture,
list, search) and Events (list, retrieve), with Stripe's objects, errors, pagination,
idempotency and headers. What it does not do is listed in docs/sandbox.md; anything
else answers as Stripe would: 400 parameter_unknown, 404 resource_missing."""

from __future__ import annotations

import base64
import hmac
import json
import secrets
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, g, jsonify, request
from werkzeug.exceptions import HTTPException

from sandbox.context import RequestFaults, settings, store, with_faults
from sandbox.stripe import params as params_of
from sandbox.stripe.blueprint import bp
from sandbox.stripe.cards import payment_method_object
from sandbox.stripe.charges import cancel, capture, confirm, update
from sandbox.stripe.idempotency import idempotent, stripe_error
from sandbox.stripe.lists import decode_page, encode_page, page, search_condition
from sandbox.stripe.objects import API_VERSION, list_object, new_intent, search_object
from sandbox.stripe.params import ParamError


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
    g.stripe_request_id = "req_" + secrets.token_hex(7)
    if not _is_authorized():
        return stripe_error(401, "invalid_request_error", "Invalid API Key provided.")
    return None


@bp.after_request
def stripe_headers(response: Response) -> Response:
    response.headers["Request-Id"] = g.get("stripe_request_id", "")
    response.headers["Stripe-Version"] = request.headers.get("Stripe-Version", API_VERSION)
    return response


@bp.after_request
def expand_payment_method(response: Response) -> Response:
    """`expand[]=payment_method` on a PaymentIntent answer (create, confirm, retrieve, and
    `data.payment_method` on lists): the PaymentMethod object instead of its id."""
    wanted = {
        value
        for source in (request.args, request.form)
        for key, value in source.items(multi=True)
        if key == "expand" or key.startswith("expand[")  # expand[]=x or expand[0]=x
    }
    if not wanted & {"payment_method", "data.payment_method"} or not response.is_json:
        return response
    body = response.get_json(silent=True)
    if not isinstance(body, dict):
        return response
    data = body.get("data")
    for intent in data if isinstance(data, list) else [body]:
        method = intent.get("payment_method") if isinstance(intent, dict) else None
        if isinstance(method, str) and intent.get("object") == "payment_intent":
            intent["payment_method"] = payment_method_object(method) or method
    response.set_data(json.dumps(body))
    return response


@bp.errorhandler(ParamError)
def invalid_request(exc: ParamError) -> Response:
    return stripe_error(400, "invalid_request_error", str(exc), param=exc.param, code=exc.code)


def register_errors(app: Flask) -> None:
    """Unknown routes and methods under /v1 answer like Stripe: JSON, never HTML."""

    def not_found(exc: HTTPException) -> Response | HTTPException:
        if not request.path.startswith("/v1"):
            return exc
        g.stripe_request_id = g.get("stripe_request_id") or "req_" + secrets.token_hex(7)
        return stripe_headers(
            stripe_error(
                404,
                "invalid_request_error",
                f"Unrecognized request URL ({request.method}: {request.path}). Please see "
                "https://docs.stripe.com or we can help at https://support.stripe.com/.",
                code="resource_missing",
            )
        )

    app.register_error_handler(404, not_found)
    app.register_error_handler(405, not_found)


# Since 2026-09-30.endive, payment_method_types is read-only: allowed_payment_method_types
# (or dynamic payment methods) chooses what a PaymentIntent accepts.
METHOD_TYPES_REMOVED_IN = "2026-09-30"


def _method_types(form: dict[str, Any]) -> dict[str, Any]:
    """The payment method types a create asks for, as the request's API version allows."""
    version = request.headers.get("Stripe-Version", API_VERSION)
    given = form.get("payment_method_types")
    allowed = form.get("allowed_payment_method_types")
    if given is not None and version[:10] >= METHOD_TYPES_REMOVED_IN:
        raise ParamError(
            "payment_method_types is no longer supported on this API version; use "
            "allowed_payment_method_types or dynamic payment methods.",
            "payment_method_types",
            "payment_method_types_no_longer_supported",
        )
    if allowed is not None and (given is not None or form.get("automatic_payment_methods")):
        raise ParamError(
            "allowed_payment_method_types cannot be used with payment_method_types or "
            "automatic_payment_methods.",
            "allowed_payment_method_types",
        )
    chosen = allowed if allowed is not None else given
    if chosen is None:
        return {}
    if not isinstance(chosen, list) or not all(isinstance(t, str) for t in chosen):
        raise ParamError("Invalid array", "allowed_payment_method_types")
    return {"payment_method_types": chosen}


def _form(allowed: frozenset[str]) -> dict[str, Any]:
    return params_of.decode(request.form.items(multi=True), allowed)


def _query(allowed: frozenset[str]) -> dict[str, Any]:
    return params_of.decode(request.args.items(multi=True), allowed)


def _intent_row(conn: sqlite3.Connection, intent_id: str) -> dict[str, Any]:
    row = conn.execute("SELECT body FROM payment_intents WHERE id = ?", (intent_id,)).fetchone()
    if row is None:
        raise ParamError(f"No such payment_intent: '{intent_id}'", "intent", "resource_missing")
    return dict(json.loads(row["body"]))


def _missing(intent_id: str) -> Response:
    return stripe_error(
        404,
        "invalid_request_error",
        f"No such payment_intent: '{intent_id}'",
        code="resource_missing",
        param="intent",
    )


def _customer(raw: object) -> str:
    """A customer id the sandbox made (POST /v1/customers), as Stripe checks it."""
    if isinstance(raw, str) and store().query("SELECT 1 FROM customers WHERE id = ?", (raw,)):
        return raw
    raise ParamError(f"No such customer: '{str(raw)[:60]}'", "customer", "resource_missing")


def _answer(result: tuple[dict[str, Any], Response | None]) -> Response:
    intent, error = result
    return error if error is not None else jsonify(intent)


@bp.post("/v1/payment_intents")
@with_faults("stripe", "create")
@idempotent
def create_payment_intent(faults: RequestFaults) -> Response:
    form = _form(params_of.CREATE)
    amount = params_of.integer(form, "amount", required=True)
    currency = form.get("currency")
    if not isinstance(currency, str) or not currency.isalpha() or len(currency) != 3:
        raise ParamError("Missing required param: currency.", "currency", "parameter_missing")
    minimum = params_of.MINIMUM_CHARGE.get(currency.lower(), 1)
    if amount is None or amount < minimum:
        raise ParamError(
            f"Amount must be at least {minimum} {currency.lower()} (in the currency's "
            "smallest unit)",
            "amount",
            "amount_too_small",
        )
    fields: dict[str, Any] = {
        "amount": amount,
        "currency": currency.lower(),
        "metadata": params_of.metadata(form),
        "capture_method": params_of.choice(form, "capture_method", params_of.CAPTURE_METHODS)
        or "automatic_async",
    }
    for name in ("payment_method", "description", "receipt_email", "statement_descriptor"):
        if isinstance(form.get(name), str):
            fields[name] = form[name]
    if "customer" in form:
        fields["customer"] = _customer(form["customer"])
    if isinstance(form.get("automatic_payment_methods"), dict):
        automatic = form["automatic_payment_methods"]
        fields["automatic_payment_methods"] = {
            "enabled": automatic.get("enabled") == "true",
            **{k: v for k, v in automatic.items() if k == "allow_redirects"},
        }
    fields.update(_method_types(form))
    is_confirm = params_of.boolean(form, "confirm")
    intent = new_intent(fields)
    with store().transaction() as conn:
        conn.execute(
            "INSERT INTO payment_intents (id, amount, currency, status, payment_method, "
            "metadata, created, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                intent["id"],
                amount,
                intent["currency"],
                intent["status"],
                intent["payment_method"],
                json.dumps(intent["metadata"]),
                intent["created"],
                json.dumps(intent),
            ),
        )
        if not is_confirm:
            return jsonify(intent)
        return _answer(confirm(conn, intent, form))


def _act(
    intent_id: str,
    allowed: frozenset[str],
    action: Callable[[sqlite3.Connection, dict[str, Any], dict[str, Any]], Any],
) -> Response:
    form = _form(allowed)
    with store().transaction() as conn:
        try:
            intent = _intent_row(conn, intent_id)
        except ParamError:
            return _missing(intent_id)
        return _answer(action(conn, intent, form))


@bp.post("/v1/payment_intents/<intent_id>/confirm")
@with_faults("stripe", "confirm")
@idempotent
def confirm_payment_intent(faults: RequestFaults, intent_id: str) -> Response:
    return _act(intent_id, params_of.CONFIRM, confirm)


@bp.post("/v1/payment_intents/<intent_id>/cancel")
@with_faults("stripe", "cancel")
@idempotent
def cancel_payment_intent(faults: RequestFaults, intent_id: str) -> Response:
    return _act(intent_id, params_of.CANCEL, cancel)


@bp.post("/v1/payment_intents/<intent_id>/capture")
@with_faults("stripe", "capture")
@idempotent
def capture_payment_intent(faults: RequestFaults, intent_id: str) -> Response:
    return _act(intent_id, params_of.CAPTURE, capture)


@bp.post("/v1/payment_intents/<intent_id>")
@with_faults("stripe", "update")
@idempotent
def update_payment_intent(faults: RequestFaults, intent_id: str) -> Response:
    return _act(intent_id, params_of.UPDATE, update)


@bp.get("/v1/payment_intents/<intent_id>")
@with_faults("stripe", "retrieve")
def retrieve_payment_intent(faults: RequestFaults, intent_id: str) -> Response:
    _query(params_of.RETRIEVE)
    faults.slow_down()
    rows = store().query("SELECT body FROM payment_intents WHERE id = ?", (intent_id,))
    if not rows:
        return faults.after_commit(_missing(intent_id))
    return faults.after_commit(jsonify(json.loads(rows[0]["body"])))


@bp.get("/v1/payment_intents")
@with_faults("stripe", "list")
def list_payment_intents(faults: RequestFaults) -> Response:
    query = _query(params_of.LIST)
    where, bounds = params_of.created_bounds(query)  # a list is consistent: no search lag
    args: tuple[object, ...] = bounds
    if "customer" in query:
        where = f"{where} AND json_extract(body, '$.customer') = ?"
        args = (*args, _customer(query["customer"]))
    faults.slow_down()
    rows, has_more = page(
        store().connection(),
        "payment_intents",
        where,
        args,
        starting_after=query.get("starting_after"),
        ending_before=query.get("ending_before"),
        limit=params_of.limit(query),
        what="payment_intent",
    )
    data = [json.loads(r["body"]) for r in rows]
    return faults.after_commit(jsonify(list_object("/v1/payment_intents", data, has_more)))


@bp.get("/v1/payment_intents/search")
@with_faults("stripe", "search")
def search_payment_intents(faults: RequestFaults) -> Response:
    query = _query(params_of.SEARCH)
    where, args = search_condition(str(query.get("query", "")))
    after = decode_page(query.get("page"))
    size = params_of.limit(query)
    faults.slow_down()
    # Stripe's search index is eventually consistent ("under normal conditions within a
    # minute", longer during outages): it sees only intents older than the lag.
    where, args = f"{where} AND created <= ?", (*args, time.time() - faults.search_lag_s())
    if after is not None:
        where, args = f"{where} AND rowid < ?", (*args, after)
    rows = store().query(
        f"SELECT rowid, body FROM payment_intents WHERE {where} ORDER BY rowid DESC LIMIT ?",
        (*args, size + 1),
    )
    next_page = encode_page(rows[size - 1]["rowid"]) if len(rows) > size else None
    data = [json.loads(r["body"]) for r in rows[:size]]
    body = search_object("/v1/payment_intents/search", data, next_page)
    return faults.after_commit(jsonify(body))


def _event_json(row: sqlite3.Row) -> dict[str, Any]:
    event = dict(json.loads(row["body"]))
    pending = row["delivered_at"] is None and not row["is_dropped"] and settings().webhook_url
    event["pending_webhooks"] = 1 if pending else 0
    return event


@bp.get("/v1/events")
@with_faults("stripe", "events")
def list_events(faults: RequestFaults) -> Response:
    query = _query(params_of.EVENTS)
    where, args = "dialect = 'stripe'", []
    delivered = query.get("delivery_success")
    if delivered == "false":
        where += " AND delivered_at IS NULL"
    elif delivered == "true":
        where += " AND delivered_at IS NOT NULL"
    elif delivered is not None:
        raise ParamError(f"Invalid boolean: {delivered}", "delivery_success")
    types = query.get("types") or ([query["type"]] if query.get("type") else [])
    if types:
        if not isinstance(types, list):
            raise ParamError("Invalid array: types", "types")
        like = " OR ".join("type GLOB ?" for _ in types)
        where += f" AND ({like})"
        args += [str(t) for t in types]  # Stripe's wildcard: payment_intent.*
    faults.slow_down()
    rows, has_more = page(
        store().connection(),
        "events",
        where,
        tuple(args),
        starting_after=query.get("starting_after"),
        ending_before=query.get("ending_before"),
        limit=params_of.limit(query),
        what="event",
    )
    data = [_event_json(r) for r in rows]
    return faults.after_commit(jsonify(list_object("/v1/events", data, has_more)))


@bp.get("/v1/events/<event_id>")
@with_faults("stripe", "event")
def retrieve_event(faults: RequestFaults, event_id: str) -> Response:
    faults.slow_down()
    rows = store().query("SELECT * FROM events WHERE id = ? AND dialect = 'stripe'", (event_id,))
    if not rows:
        return faults.after_commit(
            stripe_error(
                404,
                "invalid_request_error",
                f"No such event: '{event_id}'",
                code="resource_missing",
                param="id",
            )
        )
    return faults.after_commit(jsonify(_event_json(rows[0])))
