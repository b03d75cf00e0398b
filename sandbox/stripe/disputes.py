"""Stripe Disputes as its test mode tells them. A charge made with one of Stripe's
dispute test cards is disputed as soon as it succeeds:
- `pm_card_createDispute` (4000000000000259): `fraudulent`, `needs_response`, the money
  withdrawn (`charge.dispute.created`, then `charge.dispute.funds_withdrawn`);
- `pm_card_createDisputeProductNotReceived` (4000000000002685): `product_not_received`,
  the same;
- `pm_card_createDisputeInquiry` (4000000000001976): an inquiry,
  `warning_needs_response`, no money moved.
Evidence decides it, as in Stripe's test mode: `POST /v1/disputes/{id}` with
`evidence[uncategorized_text]=winning_evidence` moves it to review (`under_review`,
`charge.dispute.updated`) and then it is won (`charge.dispute.closed`,
`charge.dispute.funds_reinstated`; an inquiry: `warning_closed`);
`losing_evidence` loses it. `POST /v1/disputes/{id}/close` accepts it: lost.
`GET /v1/disputes/{id}` and `GET /v1/disputes` (`payment_intent`) read them."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from flask import Response, jsonify, request

from sandbox.context import RequestFaults, settings, store, with_faults
from sandbox.events import create_event
from sandbox.store import dumps
from sandbox.stripe import balance
from sandbox.stripe import params as params_of
from sandbox.stripe.blueprint import bp
from sandbox.stripe.cards import payment_method_object
from sandbox.stripe.idempotency import idempotent, stripe_error
from sandbox.stripe.lists import page
from sandbox.stripe.objects import list_object, new_id

# The dispute test cards' last four digits (their pm_card_* ids and the PaymentMethods
# Stripe.js creates from their numbers) -> (reason, status at creation)
DISPUTE_CARDS = {
    "0259": ("fraudulent", "needs_response"),
    "2685": ("product_not_received", "needs_response"),
    "1976": ("general", "warning_needs_response"),
}
EVIDENCE_FIELDS = (
    "access_activity_log",
    "billing_address",
    "cancellation_policy",
    "cancellation_policy_disclosure",
    "cancellation_rebuttal",
    "customer_communication",
    "customer_email_address",
    "customer_name",
    "customer_purchase_ip",
    "customer_signature",
    "duplicate_charge_documentation",
    "duplicate_charge_explanation",
    "duplicate_charge_id",
    "product_description",
    "receipt",
    "refund_policy",
    "refund_policy_disclosure",
    "refund_refusal_explanation",
    "service_date",
    "service_documentation",
    "shipping_address",
    "shipping_carrier",
    "shipping_date",
    "shipping_documentation",
    "shipping_tracking_number",
    "uncategorized_file",
    "uncategorized_text",
)
UPDATE = frozenset({"evidence", "expand", "metadata", "submit"})
LIST = frozenset({"charge", "ending_before", "expand", "limit", "payment_intent", "starting_after"})
EVIDENCE_DAYS = 7  # Stripe gives days to answer; the due date is a week out here
WON = {"needs_response": "won", "warning_needs_response": "warning_closed"}
REVIEWING = {"needs_response": "under_review", "warning_needs_response": "warning_under_review"}


def open_for(conn: sqlite3.Connection, intent: dict[str, Any]) -> None:
    """Dispute a charge that just succeeded, if its card is one of the dispute cards."""
    method = payment_method_object(intent.get("payment_method") or "")
    card = DISPUTE_CARDS.get(method["card"]["last4"]) if method else None
    if card is None:
        return
    reason, status = card
    now = int(time.time())
    dispute = {
        "id": new_id("dp"),
        "object": "dispute",
        "amount": intent["amount"],
        "balance_transactions": [],
        "charge": intent.get("latest_charge"),
        "created": now,
        "currency": intent["currency"],
        "evidence": {**{name: None for name in EVIDENCE_FIELDS}, "enhanced_evidence": {}},
        "evidence_details": {
            "due_by": now + EVIDENCE_DAYS * 86400,
            "has_evidence": False,
            "past_due": False,
            "submission_count": 0,
            "enhanced_eligibility": {},
        },
        "enhanced_eligibility_types": [],
        "is_charge_refundable": status.startswith("warning_"),
        "livemode": False,
        "metadata": {},
        "payment_intent": intent["id"],
        "payment_method_details": {
            "card": {
                "brand": "visa",
                "case_type": "inquiry" if status.startswith("warning_") else "chargeback",
                "network_reason_code": "10.4",
                "network": "visa",
            },
            "type": "card",
        },
        "reason": reason,
        "status": status,
    }
    conn.execute(
        "INSERT INTO disputes (id, payment_intent, status, body) VALUES (?, ?, ?, ?)",
        (dispute["id"], intent["id"], status, dumps(dispute)),
    )
    create_event(store(), conn, "stripe", "charge.dispute.created", dispute)
    if status == "needs_response":
        _move_funds(conn, dispute, -1)


def _move_funds(conn: sqlite3.Connection, dispute: dict[str, Any], sign: int) -> None:
    """The balance transaction and event of money leaving (-1) or coming back (+1)."""
    txn = balance.record(
        conn,
        "adjustment",
        dispute["id"],
        sign * dispute["amount"],
        dispute["currency"],
        fee=settings().dispute_fee if sign < 0 else 0,
        fee_description="Dispute fee",
        category="dispute" if sign < 0 else "dispute_reversal",
        description=f"Chargeback {'withdrawal' if sign < 0 else 'reversal'}",
    )
    dispute["balance_transactions"].append(txn)
    _save(conn, dispute)
    kind = "funds_withdrawn" if sign < 0 else "funds_reinstated"
    create_event(store(), conn, "stripe", f"charge.dispute.{kind}", dispute)


def _save(conn: sqlite3.Connection, dispute: dict[str, Any]) -> None:
    conn.execute(
        "UPDATE disputes SET status = ?, body = ? WHERE id = ?",
        (dispute["status"], dumps(dispute), dispute["id"]),
    )


def _load(conn: sqlite3.Connection, dispute_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT body FROM disputes WHERE id = ?", (dispute_id,)).fetchone()
    return dict(json.loads(row["body"])) if row else None


def _missing(dispute_id: str) -> Response:
    return stripe_error(
        404,
        "invalid_request_error",
        f"No such dispute: '{dispute_id}'",
        code="resource_missing",
        param="id",
    )


def _closed(dispute: dict[str, Any]) -> Response:
    return stripe_error(
        400,
        "invalid_request_error",
        f"This dispute is already closed ({dispute['status']}).",
    )


def _decide(conn: sqlite3.Connection, dispute: dict[str, Any], is_won: bool) -> None:
    opened = (
        "warning_needs_response" if dispute["status"].startswith("warning_") else "needs_response"
    )
    dispute["status"] = WON[opened] if is_won else "lost"
    _save(conn, dispute)
    create_event(store(), conn, "stripe", "charge.dispute.closed", dispute)
    if is_won and opened == "needs_response":
        _move_funds(conn, dispute, +1)


@bp.post("/v1/disputes/<dispute_id>")
@with_faults("stripe", "update_dispute")
@idempotent
def update_dispute(faults: RequestFaults, dispute_id: str) -> Response:
    form = params_of.decode(request.form.items(multi=True), UPDATE)
    given = form.get("evidence")
    evidence: dict[str, Any] = given if isinstance(given, dict) else {}
    with store().transaction() as conn:
        dispute = _load(conn, dispute_id)
        if dispute is None:
            return _missing(dispute_id)
        if dispute["status"] not in REVIEWING and not dispute["status"].endswith("under_review"):
            return _closed(dispute)
        for name, value in evidence.items():
            if name in dispute["evidence"] and isinstance(value, str):
                dispute["evidence"][name] = value
        dispute["metadata"].update(params_of.metadata(form))
        text = dispute["evidence"].get("uncategorized_text") or ""
        if form.get("submit", "true") != "false" and dispute["status"] in REVIEWING:
            dispute["evidence_details"]["has_evidence"] = True
            dispute["evidence_details"]["submission_count"] += 1
            dispute["status"] = REVIEWING[dispute["status"]]
            _save(conn, dispute)
            create_event(store(), conn, "stripe", "charge.dispute.updated", dispute)
        else:
            _save(conn, dispute)
        if dispute["status"].endswith("under_review") and text in (
            "winning_evidence",
            "losing_evidence",
        ):
            _decide(conn, dispute, text == "winning_evidence")
    return faults.after_commit(jsonify(dispute))


@bp.post("/v1/disputes/<dispute_id>/close")
@with_faults("stripe", "close_dispute")
@idempotent
def close_dispute(faults: RequestFaults, dispute_id: str) -> Response:
    with store().transaction() as conn:
        dispute = _load(conn, dispute_id)
        if dispute is None:
            return _missing(dispute_id)
        if dispute["status"] in ("won", "lost", "warning_closed"):
            return _closed(dispute)
        _decide(conn, dispute, is_won=False)
    return faults.after_commit(jsonify(dispute))


@bp.get("/v1/disputes/<dispute_id>")
@with_faults("stripe", "retrieve_dispute")
def retrieve_dispute(faults: RequestFaults, dispute_id: str) -> Response:
    faults.slow_down()
    dispute = _load(store().connection(), dispute_id)
    return _missing(dispute_id) if dispute is None else faults.after_commit(jsonify(dispute))


@bp.get("/v1/disputes")
@with_faults("stripe", "list_disputes")
def list_disputes(faults: RequestFaults) -> Response:
    query = params_of.decode(request.args.items(multi=True), LIST)
    faults.slow_down()
    where, args = "1 = 1", tuple[Any, ...]()
    if isinstance(query.get("payment_intent"), str):
        where, args = "payment_intent = ?", (query["payment_intent"],)
    rows, has_more = page(
        store().connection(),
        "disputes",
        where,
        args,
        starting_after=query.get("starting_after"),
        ending_before=query.get("ending_before"),
        limit=params_of.limit(query),
        what="dispute",
    )
    data = [json.loads(r["body"]) for r in rows]
    return faults.after_commit(jsonify(list_object("/v1/disputes", data, has_more)))
