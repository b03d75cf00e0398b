"""Stripe Refunds: `POST /v1/refunds` (idempotent, with faults like every POST),
`GET /v1/refunds/{id}`, `GET /v1/refunds` (`payment_intent`, pages). A refund succeeds at
once (events `refund.created` and `charge.refunded`), except for charges made with
Stripe's two test cards whose refunds change later (`--refund-settle-s` after, or at
`POST /_sandbox/refunds/settle`), each change with `charge.refund.updated` and
`refund.updated`:
- `pm_card_pendingRefund`: `pending`, later `succeeded`;
- `pm_card_refundFail`: `succeeded`, later `failed` (`failure_reason`, and `refund.failed`)."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from flask import Response, g, jsonify, request

from sandbox.context import RequestFaults, settings, store, with_faults
from sandbox.events import create_event
from sandbox.store import Store, dumps
from sandbox.stripe import balance
from sandbox.stripe import params as params_of
from sandbox.stripe.blueprint import bp
from sandbox.stripe.idempotency import idempotent, stripe_error
from sandbox.stripe.lists import page
from sandbox.stripe.objects import list_object, new_id
from sandbox.stripe.params import ParamError

CREATE = frozenset({"amount", "charge", "expand", "metadata", "payment_intent", "reason"})
LIST = frozenset({"charge", "ending_before", "expand", "limit", "payment_intent", "starting_after"})
REASONS = ("duplicate", "fraudulent", "requested_by_customer")
FAILING_METHOD = "pm_card_refundFail"
PENDING_METHOD = "pm_card_pendingRefund"
# (status at creation, the later one) by the card a refund's charge was made with
LATER = {FAILING_METHOD: ("succeeded", "failed"), PENDING_METHOD: ("pending", "succeeded")}


def _intent(conn: sqlite3.Connection, intent_id: object) -> dict[str, Any]:
    if not isinstance(intent_id, str) or not intent_id:
        raise ParamError(
            "One of the following params should be provided for this request: payment_intent "
            "or charge.",
            "payment_intent",
            "parameter_missing",
        )
    row = conn.execute("SELECT body FROM payment_intents WHERE id = ?", (intent_id,)).fetchone()
    if row is None:
        raise ParamError(
            f"No such payment_intent: '{intent_id}'", "payment_intent", "resource_missing"
        )
    return dict(json.loads(row["body"]))


def _refund_object(
    intent: dict[str, Any], amount: int, form: dict[str, Any], status: str
) -> dict[str, Any]:
    refund_id = new_id("re")
    return {
        "id": refund_id,
        "object": "refund",
        "amount": amount,
        "balance_transaction": None,  # its balance transaction's, when kept
        "charge": intent.get("latest_charge"),
        "created": int(time.time()),
        "currency": intent["currency"],
        "destination_details": {"card": {"type": "refund"}, "type": "card"},
        "failure_reason": "expired_or_canceled_card" if status == "failed" else None,
        "metadata": params_of.metadata(form),
        "payment_intent": intent["id"],
        "reason": params_of.choice(form, "reason", REASONS),
        "receipt_number": None,
        "source_transfer_reversal": None,
        "status": status,
        "transfer_reversal": None,
    }


@bp.post("/v1/refunds")
@with_faults("stripe", "refund")
@idempotent
def create_refund(faults: RequestFaults) -> Response:
    form = params_of.decode(request.form.items(multi=True), CREATE)
    with store().transaction() as conn:
        intent = _intent(conn, form.get("payment_intent"))
        if intent["status"] != "succeeded":
            return stripe_error(
                400,
                "invalid_request_error",
                f"This PaymentIntent ({intent['id']}) does not have a successful charge to refund.",
                code="charge_not_refundable" if intent["status"] != "canceled" else None,
                param="payment_intent",
            )
        remaining = intent["amount_received"] - store().refunded(conn, intent["id"])
        amount = params_of.integer(form, "amount")
        amount = remaining if amount is None else amount
        if remaining <= 0:
            return stripe_error(
                400,
                "invalid_request_error",
                f"Charge {intent.get('latest_charge')} has already been refunded.",
                code="charge_already_refunded",
            )
        if not 1 <= amount <= remaining:
            return stripe_error(
                400,
                "invalid_request_error",
                f"Refund amount ({amount}) is greater than unrefunded amount on charge "
                f"({remaining})",
                code="amount_too_large",
                param="amount",
            )
        refund = _make_refund(
            conn,
            intent,
            amount,
            form,
            request_info=(g.get("stripe_request_id"), request.headers.get("Idempotency-Key")),
            remaining=remaining,
        )
    return jsonify(refund)


def _make_refund(
    conn: sqlite3.Connection,
    intent: dict[str, Any],
    amount: int,
    form: dict[str, Any],
    *,
    request_info: tuple[str | None, str | None],
    remaining: int,
) -> dict[str, Any]:
    """Record a refund of `amount` (checked by the caller) with its events."""
    first, later = LATER.get(intent.get("payment_method") or "", ("succeeded", None))
    refund = _refund_object(intent, amount, form, first)
    txn = balance.record(conn, "refund", refund["id"], -amount, intent["currency"])
    refund["balance_transaction"] = txn["id"]
    store().record_refund(
        conn,
        "stripe",
        {
            **refund,
            "_payment": intent["id"],
            "_payment_ref": intent["metadata"].get("payment_id"),
            "_refund_ref": refund["metadata"].get("refund_id"),
        },
    )
    info = request_info
    if later is not None:
        conn.execute(
            "INSERT INTO refund_changes (refund_id, status, due) VALUES (?, ?, ?)",
            (refund["id"], later, time.time() + settings().refund_settle_s),
        )
    create_event(store(), conn, "stripe", "refund.created", refund, request_info=info)
    if first == "succeeded":
        charge = {
            "id": intent.get("latest_charge"),
            "object": "charge",
            "amount": intent["amount"],
            "amount_refunded": amount + intent["amount_received"] - remaining,
            "currency": intent["currency"],
            "metadata": intent["metadata"],
            "payment_intent": intent["id"],
            "refunded": amount == remaining,
        }
        create_event(store(), conn, "stripe", "charge.refunded", charge, request_info=info)
    return refund


def dashboard_refund(intent_id: str, amount: int | None) -> dict[str, Any]:
    """A refund made in Stripe's Dashboard: no metadata of ours, no idempotency key, the
    same events as any (`POST /_sandbox/stripe/dashboard_refunds`). Raises ParamError
    as the API would refuse it."""
    with store().transaction() as conn:
        intent = _intent(conn, intent_id)
        remaining = intent.get("amount_received", 0) - store().refunded(conn, intent["id"])
        amount = remaining if amount is None else amount
        if intent["status"] != "succeeded" or not 1 <= amount <= remaining:
            raise ParamError(f"cannot refund {amount} of {intent_id}", "amount", "amount_too_large")
        return _make_refund(
            conn, intent, amount, {}, request_info=(None, None), remaining=remaining
        )


@bp.get("/v1/refunds/<refund_id>")
@with_faults("stripe", "retrieve_refund")
def retrieve_refund(faults: RequestFaults, refund_id: str) -> Response:
    faults.slow_down()
    settle_due(store())
    rows = store().query(
        "SELECT body FROM refunds WHERE id = ? AND dialect = 'stripe'", (refund_id,)
    )
    if not rows:
        return stripe_error(
            404,
            "invalid_request_error",
            f"No such refund: '{refund_id}'",
            code="resource_missing",
            param="id",
        )
    return faults.after_commit(jsonify(json.loads(rows[0]["body"])))


@bp.get("/v1/refunds")
@with_faults("stripe", "list_refunds")
def list_refunds(faults: RequestFaults) -> Response:
    query = params_of.decode(request.args.items(multi=True), LIST)
    faults.slow_down()
    settle_due(store())
    where, args = "dialect = 'stripe'", tuple[Any, ...]()
    if isinstance(query.get("payment_intent"), str):
        where, args = where + " AND payment_object_id = ?", (query["payment_intent"],)
    rows, has_more = page(
        store().connection(),
        "refunds",
        where,
        args,
        starting_after=query.get("starting_after"),
        ending_before=query.get("ending_before"),
        limit=params_of.limit(query),
        what="refund",
    )
    data = [json.loads(r["body"]) for r in rows]
    return faults.after_commit(jsonify(list_object("/v1/refunds", data, has_more)))


def settle_due(db: Store, *, is_forced: bool = False) -> int:
    """Give refunds whose later outcome is due (all of them when forced) that outcome,
    with its events; returns how many changed. Run by the webhook deliverer's loop, on
    every refund read, and by `POST /_sandbox/refunds/settle`."""
    changed = 0
    with db.transaction() as conn:
        due = conn.execute(
            "SELECT refund_id, status FROM refund_changes WHERE due <= ?",
            (float("inf") if is_forced else time.time(),),
        ).fetchall()
        for row in due:
            body_row = conn.execute(
                "SELECT body FROM refunds WHERE id = ?", (row["refund_id"],)
            ).fetchone()
            conn.execute("DELETE FROM refund_changes WHERE refund_id = ?", (row["refund_id"],))
            if body_row is None:
                continue
            refund = dict(json.loads(body_row["body"]))
            refund["status"] = row["status"]
            if row["status"] == "failed":  # the money comes back to the balance
                refund["failure_reason"] = "expired_or_canceled_card"
                back = balance.record(
                    conn, "refund_failure", refund["id"], refund["amount"], refund["currency"]
                )
                refund["failure_balance_transaction"] = back["id"]
            conn.execute(
                "UPDATE refunds SET status = ?, body = ? WHERE id = ?",
                (row["status"], dumps(refund), refund["id"]),
            )
            kinds = ["charge.refund.updated", "refund.updated"]
            if row["status"] == "failed":
                kinds.append("refund.failed")
            for event_type in kinds:
                create_event(db, conn, "stripe", event_type, refund)
            changed += 1
    return changed
