"""Stripe's idempotency layer: every POST may carry an Idempotency-Key. The first
request with a key runs and its answer (a 500 included) is stored for the key's
lifetime; a repeat gets that answer again (`Idempotent-Replayed: true`); the same key
with other parameters or on another endpoint is an `idempotency_error`; a repeat while
the first is still running is a 409 `idempotency_key_in_use`."""

from __future__ import annotations

import functools
import hashlib
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from flask import Response, request

from sandbox.context import RequestFaults, settings, store
from sandbox.store import dumps
from sandbox.stripe.objects import error_object


def stripe_error(status: int, type_: str, message: str, **extra: Any) -> Response:
    from flask import g, jsonify

    error = error_object(type_, message, **extra)
    request_id = g.get("stripe_request_id")
    if request_id:
        error["request_log_url"] = f"https://dashboard.stripe.com/test/logs/{request_id}"
    response = jsonify(error=error)
    response.status_code = status
    return response


def canonical(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The parameters as Stripe compares them for a key, not their encoding: a list's
    `a[0]=x&a[1]=y` is `a[]=x&a[]=y`; names in any order, a list's items in theirs."""
    named = [(re.sub(r"\[\d+\]", "[]", name), value) for name, value in pairs]
    return sorted(named, key=lambda pair: pair[0])


def idempotent(view: Callable[..., Response]) -> Callable[..., Response]:
    """Wrap a POST view (already given its RequestFaults) in Stripe's key semantics."""

    @functools.wraps(view)
    def wrapper(faults: RequestFaults, *args: Any, **kwargs: Any) -> Response:
        key = request.headers.get("Idempotency-Key") or None
        if key:
            fingerprint = dumps([request.path, canonical(request.form.items(multi=True))])
            answer = _claim(key, hashlib.sha256(fingerprint.encode()).hexdigest())
            if answer is not None:
                faults.slow_down()
                return faults.after_commit(answer)
        try:
            faults.slow_down()
            if faults.internal_error_before():
                response = stripe_error(500, "api_error", "sandbox injected 500 before processing")
            else:
                response = view(faults, *args, **kwargs)
                if faults.internal_error_stored():
                    response = stripe_error(
                        500, "api_error", "sandbox injected 500 after processing"
                    )
        except BaseException:
            _release(key)
            raise
        if key and 400 <= response.status_code < 500 and response.status_code != 402:
            _release(key)  # validation failures are not stored under the key (as Stripe)
        else:
            _store(key, response)  # committed: a replay returns exactly this answer
        return faults.after_commit(response)

    return wrapper


def _claim(key: str, params_hash: str) -> Response | None:
    """None: this request owns the key; else the answer to send."""
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
        return stripe_error(
            400,
            "idempotency_error",
            "Keys for idempotent requests can only be used with the same parameters "
            "they were first used with. Try using a key other than "
            f"'{key}' if you meant to execute a different request.",
        )
    if row["state"] == "in_flight":
        response = stripe_error(
            409,
            "idempotency_error",
            "There is currently another in-progress request using this Idempotent Key "
            "(that probably means you submitted twice, and the other request is still "
            "going through). Please try again later.",
            code="idempotency_key_in_use",
        )
        response.headers["Stripe-Should-Retry"] = "true"
        return response
    response = Response(row["body"], status=row["status_code"], mimetype="application/json")
    response.headers["Idempotent-Replayed"] = "true"
    response.headers["Original-Request"] = key
    if row["status_code"] >= 500:
        # The stored failure is the answer for this key: repeating it cannot change it.
        response.headers["Stripe-Should-Retry"] = "false"
    return response


def _store(key: str | None, response: Response) -> None:
    if key:
        with store().transaction() as conn:
            conn.execute(
                "UPDATE idempotency_keys SET state = 'done', status_code = ?, body = ? "
                "WHERE key = ?",
                (response.status_code, response.get_data(as_text=True), key),
            )


def _release(key: str | None) -> None:
    if key:
        with store().transaction() as conn:
            conn.execute(
                "DELETE FROM idempotency_keys WHERE key = ? AND state = 'in_flight'", (key,)
            )
