"""Braintree's disputes: opened on a settled sale by a control (as a cardholder's bank
would: `POST /_sandbox/braintree/disputes`), then through the gateway as Braintree's
SDK drives them: `dispute.find`, `dispute.search` (by `effective_date`: the disputes one
of whose status changes took effect in the range, as the books read them),
`dispute.accept` (lost, `dispute_accepted`),
`dispute.add_text_evidence` and `dispute.finalize`, which decides it at once as
Braintree's sandbox does: won when the evidence says `compelling_evidence`, lost
otherwise (`dispute_won`, `dispute_lost`). Each change sends its notification."""

from __future__ import annotations

import json
import time
from typing import Any

from flask import Response, request

from sandbox.braintree.gateway import answer, body_of, bp, invalid, load, new_id, time_range
from sandbox.braintree.objects import shown_dispute
from sandbox.braintree.xml import render_collection
from sandbox.context import RequestFaults, store, with_faults
from sandbox.events import create_event

WINNING_TEXT = "compelling_evidence"
PAGE_SIZE = 10  # Braintree's dispute search pages
DAY_S = 86400


def open_dispute(conn: Any, transaction_id: str) -> dict[str, Any] | None:
    """A chargeback of the whole of a settled sale, with its notification (None: no such
    settled sale)."""
    sale = load(conn, transaction_id)
    if sale is None or sale["type"] != "sale" or sale["status"] != "settled":
        return None
    now = time.time()
    dispute = {
        "id": new_id(),
        "amount": sale["amount"],
        "amount_disputed": sale["amount"],
        "amount_won": "0.00",
        "case_number": f"CB{int(now)}",
        "currency_iso_code": sale["currency_iso_code"],
        "kind": "chargeback",
        "reason": "fraud",
        "status": "open",
        "merchant_account_id": sale["merchant_account_id"],
        "transaction": {
            "id": sale["id"],
            "amount": sale["amount"],
            "order_id": sale.get("order_id"),
        },
        "evidence": [],
        "created_at_s": now,
        "updated_at_s": now,
        "status_history": [{"status": "open", "at_s": now}],
    }
    _save(conn, dispute, "dispute_opened")
    return dispute


def _save(conn: Any, dispute: dict[str, Any], kind: str) -> None:
    conn.execute(
        "INSERT INTO braintree_disputes (id, transaction_id, status, body) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET status = excluded.status, body = excluded.body",
        (dispute["id"], dispute["transaction"]["id"], dispute["status"], json.dumps(dispute)),
    )
    create_event(store(), conn, "braintree", kind, {"dispute": dispute})


def _load(conn: Any, dispute_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT body FROM braintree_disputes WHERE id = ?", (dispute_id,)).fetchone()
    return json.loads(row["body"]) if row else None


def _moved(dispute: dict[str, Any], status: str) -> None:
    now = time.time()
    dispute["status"], dispute["updated_at_s"] = status, now
    dispute["status_history"].append({"status": status, "at_s": now})


@bp.get("/merchants/<merchant_id>/disputes/<dispute_id>")
@with_faults("braintree", "dispute")
def find_dispute(faults: RequestFaults, merchant_id: str, dispute_id: str) -> Response:
    faults.slow_down()
    with store().transaction() as conn:
        dispute = _load(conn, dispute_id)
    if dispute is None:
        return Response(status=404)
    return faults.after_commit(answer("dispute", shown_dispute(dispute)))


@bp.post("/merchants/<merchant_id>/disputes/advanced_search")
@with_faults("braintree", "search")
def search_disputes(faults: RequestFaults, merchant_id: str) -> Response:
    """One page (`?page=`, from 1) of the disputes a status change of which took effect on
    a day in the `effective_date` range (whole UTC days, both ends included)."""
    criteria = body_of().get("search") or {}
    since, until = time_range(criteria.get("effective_date"))
    page = request.args.get("page", "1")
    if since is None or until is None or not page.isdigit() or int(page) < 1:
        return invalid("Search needs an effective_date range and a page.", "91733", "search")
    first, last = since - since % DAY_S, until - until % DAY_S + DAY_S
    faults.slow_down()
    rows = store().query("SELECT body FROM braintree_disputes ORDER BY id")
    found = [
        dispute
        for dispute in (json.loads(row["body"]) for row in rows)
        if any(first <= event["at_s"] < last for event in dispute["status_history"])
    ]
    start = (int(page) - 1) * PAGE_SIZE
    shown = [shown_dispute(d) for d in found[start : start + PAGE_SIZE]]
    body = render_collection(
        "disputes", "dispute", shown, total_items=len(found), page_size=PAGE_SIZE
    )
    return faults.after_commit(Response(body, mimetype="application/xml"))


@bp.put("/merchants/<merchant_id>/disputes/<dispute_id>/accept")
@with_faults("braintree", "dispute")
def accept(faults: RequestFaults, merchant_id: str, dispute_id: str) -> Response:
    return _decide(faults, dispute_id, "accepted", "dispute_accepted")


@bp.put("/merchants/<merchant_id>/disputes/<dispute_id>/finalize")
@with_faults("braintree", "dispute")
def finalize(faults: RequestFaults, merchant_id: str, dispute_id: str) -> Response:
    return _decide(faults, dispute_id, None, None)


def _decide(
    faults: RequestFaults, dispute_id: str, status: str | None, kind: str | None
) -> Response:
    faults.slow_down()
    with store().transaction() as conn:
        dispute = _load(conn, dispute_id)
        if dispute is None:
            return Response(status=404)
        if dispute["status"] != "open":
            return invalid("Disputes can only be changed while open.", "95701", "status")
        if status is None:  # finalized: Braintree's sandbox decides by the evidence
            won = any(e.get("comment") == WINNING_TEXT for e in dispute["evidence"])
            _moved(dispute, "disputed")
            status, kind = ("won", "dispute_won") if won else ("lost", "dispute_lost")
            if won:
                dispute["amount_won"] = dispute["amount_disputed"]
        _moved(dispute, status)
        assert kind is not None
        _save(conn, dispute, kind)
    return faults.after_commit(Response(status=200))


@bp.post("/merchants/<merchant_id>/disputes/<dispute_id>/evidence")
@with_faults("braintree", "dispute")
def add_evidence(faults: RequestFaults, merchant_id: str, dispute_id: str) -> Response:
    given = body_of().get("evidence")
    comment = given.get("comments") if isinstance(given, dict) else None
    if not isinstance(comment, str) or not comment:
        return invalid("Evidence content is required.", "95708", "comments")
    faults.slow_down()
    with store().transaction() as conn:
        dispute = _load(conn, dispute_id)
        if dispute is None:
            return Response(status=404)
        evidence = {"id": new_id(), "comment": comment[:500], "created_at": None}
        dispute["evidence"].append(evidence)
        conn.execute(
            "UPDATE braintree_disputes SET body = ? WHERE id = ?",
            (json.dumps(dispute), dispute["id"]),
        )
    return faults.after_commit(answer("evidence", {"id": evidence["id"], "comment": comment}, 201))
