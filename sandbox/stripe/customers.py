"""Stripe Customers: `POST /v1/customers` (idempotent, with faults like every POST) and
`GET /v1/customers/{id}`. A PaymentIntent may name one (`customer`), and the list of
intents filters by it (`GET /v1/payment_intents?customer=`), as Stripe's does."""

from __future__ import annotations

import json
import time
from typing import Any

from flask import Response, jsonify, request

from sandbox.context import RequestFaults, store, with_faults
from sandbox.stripe import params as params_of
from sandbox.stripe.blueprint import bp
from sandbox.stripe.idempotency import idempotent, stripe_error
from sandbox.stripe.objects import new_id

TEXTS = ("description", "email", "name")
CREATE = frozenset({*TEXTS, "expand", "metadata"})


@bp.post("/v1/customers")
@with_faults("stripe", "customer")
@idempotent
def create_customer(faults: RequestFaults) -> Response:
    form = params_of.decode(request.form.items(multi=True), CREATE)
    customer: dict[str, Any] = {
        "id": new_id("cus"),
        "object": "customer",
        "created": int(time.time()),
        "email": form.get("email") if isinstance(form.get("email"), str) else None,
        "name": form.get("name") if isinstance(form.get("name"), str) else None,
        "description": form.get("description")
        if isinstance(form.get("description"), str)
        else None,
        "metadata": params_of.metadata(form),
        "livemode": False,
    }
    with store().transaction() as conn:
        conn.execute(
            "INSERT INTO customers (id, created, body) VALUES (?, ?, ?)",
            (customer["id"], customer["created"], json.dumps(customer)),
        )
    return jsonify(customer)


@bp.get("/v1/customers/<customer_id>")
@with_faults("stripe", "retrieve")
def retrieve_customer(faults: RequestFaults, customer_id: str) -> Response:
    faults.slow_down()
    rows = store().query("SELECT body FROM customers WHERE id = ?", (customer_id,))
    if not rows:
        return stripe_error(
            404,
            "invalid_request_error",
            f"No such customer: '{customer_id}'",
            code="resource_missing",
            param="id",
        )
    return faults.after_commit(jsonify(json.loads(rows[0]["body"])))
