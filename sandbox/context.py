"""What every part of the sandbox shares, a leaf (it imports no dialect): its settings,
its store, and the faults a request draws (`with_faults`)."""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Response, current_app, jsonify, request

from sandbox.braintree import xml as braintree_xml
from sandbox.faults import REQUEST_KINDS, Fault, draw_faults, fault_exists, tamper
from sandbox.store import Store

DEFAULT_KEY_LIFETIME_S = 24 * 3600  # Stripe keeps idempotency keys for 24 hours
# Stripe's search is eventually consistent: "under normal operating conditions, data is
# searchable in less than a minute". A few seconds keeps tests and drills honest
# (nothing may count on search seeing a new intent) without slowing them down.
DEFAULT_SEARCH_LAG_S = 2.0
DEFAULT_REFUND_SETTLE_S = 10.0
DEFAULT_AVAILABLE_AFTER_S = 2 * 86400.0  # Stripe's standard payout schedule: two days


@dataclass
class SandboxConfig:
    db_path: str
    stripe_secret_key: str = "sk_test_sandbox"
    stripe_webhook_secret: str = "whsec_sandbox"
    webhook_url: str | None = None
    key_lifetime_s: float = DEFAULT_KEY_LIFETIME_S
    search_lag_s: float = DEFAULT_SEARCH_LAG_S  # a search_lag fault overrides it
    # When a refund of Stripe's pending or failing refund test card changes.
    refund_settle_s: float = DEFAULT_REFUND_SETTLE_S
    # The balance (sandbox/stripe/balance.py): the fee of a card charge (Stripe's EEA
    # schedule, 1.5% + 0.25), of a dispute, when money becomes available, payouts' pace.
    fee_percent: str = "1.5"
    fee_fixed: int = 25
    dispute_fee: int = 2000
    available_after_s: float = DEFAULT_AVAILABLE_AFTER_S
    payout_interval_s: float = 0.0  # automatic payouts (0: only POST /_sandbox/stripe/payouts)
    # Braintree's gateway (sandbox/braintree/): the merchant and its API keys, its one
    # merchant account's currency, how long a submitted sale takes to settle, and the
    # window of its duplicate checking (0: off).
    braintree_merchant_id: str = "sandbox_merchant"
    braintree_public_key: str = "sandbox_public_key"
    braintree_private_key: str = "sandbox_private_key"
    braintree_tokenization_key: str = "sandbox_tk000000_sandbox_merchant"  # the browser's
    braintree_merchant_account_id: str = "sandbox_eur"
    braintree_currency: str = "EUR"
    braintree_settle_s: float = 10.0
    braintree_duplicate_window_s: float = 30.0
    # Braintree's fee (its fee report): a sale's rate and fixed part, in the account's
    # currency (Braintree's published European card rate: 1.9% + 0.30).
    braintree_fee_percent: str = "1.9"
    braintree_fee_fixed: int = 30
    # Set by the server loop: stop listening for N seconds.
    refuse: Callable[[float], None] = field(default=lambda seconds: None)


def _injected_error(status: int, fault: Fault) -> Response:
    """An error from in front of the provider: JSON like the provider's, or with
    html=true an HTML page, as a proxy or balancer would answer."""
    if fault.params.get("html"):
        response = Response(
            f"<html><body><h1>{status}</h1>sandbox injected</body></html>",
            status=status,
            mimetype="text/html",
        )
    else:
        kind = {
            429: "rate_limit_error",
            400: "invalid_request_error",
            401: "invalid_request_error",  # Stripe: "Invalid API Key provided" (revoked)
            403: "invalid_request_error",  # Stripe: the key lacks the permission
            404: "invalid_request_error",
        }
        response = jsonify(
            error={"type": kind.get(status, "api_error"), "message": f"sandbox injected {status}"}
        )
        response.status_code = status
    if fault.params.get("retry_after") is not None:
        response.headers["Retry-After"] = str(fault.params["retry_after"])
    if status == 429:
        response.headers["Stripe-Should-Retry"] = "true"
    return response


class ConnectionDropped(Exception):
    """The sandbox cut the connection on purpose; nothing is sent back."""


def with_faults(
    dialect: str, endpoint: str
) -> Callable[[Callable[..., Response]], Callable[..., Response]]:
    """Draw this request's faults, answer for the ones in front of the provider, and hand
    the rest to the view as its first argument."""

    def decorate(view: Callable[..., Response]) -> Callable[..., Response]:
        @functools.wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Response:
            faults = RequestFaults.draw(dialect, endpoint)
            early = faults.before_provider()
            if early is not None:
                return early
            return view(faults, *args, **kwargs)

        return wrapper

    return decorate


def store() -> Store:
    return current_app.extensions["sandbox_store"]


def settings() -> SandboxConfig:
    return current_app.config["SANDBOX"]


def drop_connection() -> None:
    """Cut the client's connection (RST on close) and stop handling the request."""
    sock = request.environ.get("werkzeug.socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
    raise ConnectionDropped()


@dataclass
class RequestFaults:
    """The faults drawn for one request, applied at the phase where each belongs."""

    faults: list[Fault]
    generation: int = 0
    endpoint: str = ""

    @classmethod
    def draw(cls, dialect: str, endpoint: str) -> RequestFaults:
        key = request.headers.get("Idempotency-Key")
        generation = store().generation
        store().log_request(
            dialect, endpoint, request.method, key, request.headers.get("Stripe-Version")
        )
        return cls(draw_faults(store(), REQUEST_KINDS, dialect, endpoint), generation, endpoint)

    def _first(self, kind: str, **match: Any) -> Fault | None:
        for fault in self.faults:
            if fault.kind == kind and all(fault.params.get(k) == v for k, v in match.items()):
                return fault
        return None

    def before_provider(self) -> Response | None:
        """Faults in front of the provider (network, balancer): nothing is processed."""
        if self._first("reset_before"):
            drop_connection()
        # A 500 of a POST is the provider's own answer, stored under the idempotency key
        # (the view answers it); on reads it comes from in front, like the others.
        statuses = (400, 401, 403, 404, 429, 502, 503) + ((500,) if request.method == "GET" else ())
        for status in statuses:
            fault = self._first("error", status=status, phase="before")
            if fault:
                return _injected_error(status, fault)
        return None

    def slow_down(self) -> None:
        """Latency and hangs happen inside the provider, while the request is in flight.

        A request that outlived a reset of the sandbox is cut off instead of processed.
        """
        for fault in self.faults:
            if fault.kind == "latency":
                time.sleep(float(fault.params["ms"]) / 1000)
            elif fault.kind == "hang":
                time.sleep(float(fault.params["seconds"]))
        if store().generation != self.generation:
            drop_connection()

    def internal_error_before(self) -> bool:
        return self._first("error", status=500, phase="before") is not None

    def internal_error_stored(self) -> bool:
        """Processed, then a 500 that Stripe stores under the key (replays repeat it)."""
        return self._first("error", status=500, phase="stored") is not None

    def search_lag_s(self) -> float:
        lagging = self._first("search_lag")
        return float(lagging.params["seconds"]) if lagging else settings().search_lag_s

    def after_commit(self, response: Response) -> Response:
        """Faults after the effect is committed: the client may never learn of it."""
        fault = self._first("commit_timeout")
        if fault:
            held_until = time.monotonic() + float(fault.params["hold_s"])
            if fault.params.get("until_deleted"):
                while time.monotonic() < held_until and fault_exists(store(), fault.id):
                    time.sleep(0.02)
            else:
                time.sleep(float(fault.params["hold_s"]))
        if self._first("reset_after"):
            drop_connection()
        changed = self._first("tamper")
        if changed and response.is_json and isinstance(response.get_json(), dict):
            body = tamper(response.get_json(), changed.params["field"], changed.params["value"])
            response.set_data(json.dumps(body))
        elif changed and response.mimetype == "application/xml":  # Braintree's
            params = changed.params
            response.set_data(
                braintree_xml.tampered(response.get_data(), params["field"], params["value"])
            )
        for fault in self.faults:
            if fault.kind == "error" and fault.params.get("phase") == "after":
                error = jsonify(
                    error={
                        "type": "api_error",
                        "message": "sandbox injected error after processing",
                    }
                )
                error.status_code = int(fault.params["status"])
                return error
        return response
