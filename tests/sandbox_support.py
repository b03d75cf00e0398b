"""A live sandbox process and a webhook receiver for tests (real HTTP, real sockets)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests

from devtools.servers import free_port, wait_for_port

PROJECT_DIR = Path(__file__).resolve().parent.parent


@dataclass
class Sandbox:
    url: str
    port: int

    def reset(self) -> None:
        requests.post(f"{self.url}/_sandbox/reset", timeout=5).raise_for_status()

    def add_fault(self, kind: str, **spec: Any) -> int:
        response = requests.post(
            f"{self.url}/_sandbox/faults", json={"kind": kind, **spec}, timeout=5
        )
        assert response.status_code == 201, response.text
        return int(response.json()["id"])

    def settle_refunds(self) -> int:
        """Refunds with a later outcome (pm_card_pendingRefund, pm_card_refundFail) get it."""
        response = requests.post(f"{self.url}/_sandbox/refunds/settle", timeout=5)
        response.raise_for_status()
        return int(response.json()["settled"])

    def dashboard_refund(self, intent_id: str, amount: int | None = None) -> dict[str, Any]:
        """A refund "made in Stripe's Dashboard" (no metadata of ours)."""
        response = requests.post(
            f"{self.url}/_sandbox/stripe/dashboard_refunds",
            json={"payment_intent": intent_id, "amount": amount},
            timeout=5,
        )
        assert response.status_code == 201, response.text
        return dict(response.json())

    def age_keys(self, seconds: float) -> int:
        """Every stored idempotency key `seconds` older (its lifetime passing, unwaited)."""
        response = requests.post(
            f"{self.url}/_sandbox/keys/age", json={"seconds": seconds}, timeout=5
        )
        response.raise_for_status()
        return int(response.json()["aged"])

    def pay_out(self, *, fail: bool = False) -> list[dict[str, Any]]:
        """Stripe's automatic payout, now: the available balance to the bank."""
        response = requests.post(
            f"{self.url}/_sandbox/stripe/payouts", json={"fail": fail}, timeout=5
        )
        assert response.status_code == 201, response.text
        return list(response.json()["data"])

    def balance_transactions(self, **filters: str) -> list[dict[str, Any]]:
        """Stripe's balance transactions as its API lists them (one page of 100)."""
        response = requests.get(
            f"{self.url}/v1/balance_transactions",
            params={"limit": "100", **filters},
            headers={"Authorization": "Bearer sk_test_sandbox"},
            timeout=5,
        )
        response.raise_for_status()
        return list(response.json()["data"])

    def plant_fee_adjustment(self, amount: int, currency: str = "eur") -> dict[str, Any]:
        """A fee the shop did not expect, taken from the balance."""
        response = requests.post(
            f"{self.url}/_sandbox/stripe/fee_adjustments",
            json={"amount": amount, "currency": currency},
            timeout=5,
        )
        assert response.status_code == 201, response.text
        return dict(response.json())

    def age_braintree(self, seconds: float) -> int:
        """Every Braintree transaction `seconds` older: settlement comes, unwaited."""
        response = requests.post(
            f"{self.url}/_sandbox/braintree/age", json={"seconds": seconds}, timeout=5
        )
        response.raise_for_status()
        return int(response.json()["aged"])

    def braintree_dispute(self, transaction_id: str) -> dict[str, Any]:
        """A cardholder's bank disputes a settled Braintree sale."""
        response = requests.post(
            f"{self.url}/_sandbox/braintree/disputes",
            json={"transaction_id": transaction_id},
            timeout=5,
        )
        assert response.status_code == 201, response.text
        return dict(response.json())

    def age_balance(self, seconds: int) -> int:
        """Every balance transaction and payout `seconds` older: days pass, unwaited."""
        response = requests.post(
            f"{self.url}/_sandbox/stripe/balance/age", json={"seconds": seconds}, timeout=5
        )
        response.raise_for_status()
        return int(response.json()["aged"])

    def clear_faults(self) -> None:
        requests.delete(f"{self.url}/_sandbox/faults", timeout=5).raise_for_status()

    def charges(self, **filters: str) -> dict[str, Any]:
        return requests.get(f"{self.url}/_sandbox/charges", params=filters, timeout=5).json()

    def succeeded_charges(self, payment_ref: str) -> int:
        return len(self.charges(payment_ref=payment_ref, status="succeeded")["data"])

    def requests_log(self, **filters: str) -> list[dict[str, Any]]:
        return requests.get(f"{self.url}/_sandbox/requests", params=filters, timeout=5).json()[
            "data"
        ]

    def wait_for_request(self, endpoint: str, count: int = 1) -> None:
        """Until `count` requests to `endpoint` have reached the sandbox (logged on
        arrival, before any latency or hang): a request "in flight" there, not a guess."""
        wait_for(lambda: len(self.requests_log(endpoint=endpoint)) >= count, timeout_s=10)

    def events(self) -> list[dict[str, Any]]:
        return requests.get(f"{self.url}/_sandbox/events", timeout=5).json()["data"]


@contextmanager
def running_sandbox(tmp_dir: str, *extra_args: str) -> Iterator[Sandbox]:
    port = free_port()
    log = open(Path(tmp_dir) / f"sandbox-{port}.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sandbox",
            "--port",
            str(port),
            "--db",
            str(Path(tmp_dir) / f"sandbox-{port}.db"),
            *extra_args,
        ],
        cwd=PROJECT_DIR,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port)
        yield Sandbox(f"http://127.0.0.1:{port}", port)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.body)


@dataclass
class Receiver:
    """Records webhook deliveries; answers `fail_next` of them with 500."""

    url: str
    deliveries: list[Delivery] = field(default_factory=list)
    fail_next: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clear(self) -> None:
        with self.lock:
            self.deliveries.clear()
            self.fail_next = 0


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    port = free_port()
    receiver = Receiver(f"http://127.0.0.1:{port}/hooks")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with receiver.lock:
                failing = receiver.fail_next > 0
                if failing:
                    receiver.fail_next -= 1
                else:
                    receiver.deliveries.append(Delivery(self.path, dict(self.headers), body))
            self.send_response(500 if failing else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


AUTH = {"Authorization": "Bearer sk_test_sandbox"}
FORM = {
    "amount": "1000",
    "currency": "eur",
    "confirm": "true",
    "automatic_payment_methods[enabled]": "true",
    "automatic_payment_methods[allow_redirects]": "never",
    "payment_method": "pm_card_visa",
    "metadata[payment_id]": "9",
    "metadata[order_id]": "4",
}


def create(sandbox: Any, key: str | None = None, **form: str) -> requests.Response:
    headers = dict(AUTH)
    if key:
        headers["Idempotency-Key"] = key
    return requests.post(
        f"{sandbox.url}/v1/payment_intents", data={**FORM, **form}, headers=headers, timeout=10
    )


def wait_for(predicate: Any, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def answer_challenge(action_url: str, *, is_completed: bool = True) -> str:
    """Press "Complete authentication" (or "Fail authentication") on the sandbox's 3-D
    Secure page, as the customer would; returns where the bank sends the customer."""
    query = parse_qs(urlsplit(action_url).query)
    page = requests.get(action_url, timeout=5)
    assert page.status_code == 200 and "Complete authentication" in page.text
    response = requests.post(
        action_url.split("?")[0],
        data={
            "client_secret": query["client_secret"][0],
            "action": "complete" if is_completed else "fail",
        },
        allow_redirects=False,
        timeout=5,
    )
    assert response.status_code == 303, response.text
    return str(response.headers["Location"])


def sdk_charge(sdk: Any, amount: int, method: str = "pm_card_visa", **params: Any) -> Any:
    """A PaymentIntent confirmed at once through Stripe's SDK (no metadata of ours unless
    given): a charge as another integration, or the Dashboard, makes it."""
    intent = sdk.v1.payment_intents.create(
        params={
            "amount": amount,
            "currency": "eur",
            "confirm": True,
            "payment_method": method,
            "allowed_payment_method_types": ["card"],
            **params,
        }
    )
    assert intent.status == "succeeded", intent.status
    return intent


@contextmanager
def wired_to_a_sandbox(make_app: Any, tmp_dir: str) -> Iterator[tuple[Any, Sandbox]]:
    """An app on a live port and a sandbox of its own that sends its webhooks to it
    (both providers' deliveries over HTTP)."""
    from werkzeug.serving import make_server

    port = free_port()
    with running_sandbox(tmp_dir, "--webhook-url", f"http://127.0.0.1:{port}/webhooks") as sandbox:
        wired_app = make_app(
            STRIPE_API_BASE=sandbox.url,
            BRAINTREE_API_BASE=sandbox.url,
            BRAINTREE_GRAPHQL_URL=f"{sandbox.url}/graphql",
        )
        server = make_server("127.0.0.1", port, wired_app, threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield wired_app, sandbox
        finally:
            server.shutdown()
            server.server_close()


def braintree_gateway(sandbox_url: str) -> Any:
    """Braintree's own SDK, unmodified, on an Environment of plain HTTP at a sandbox (as
    its own development setup points it at a local gateway)."""
    import braintree

    address = urlsplit(sandbox_url)
    local = braintree.Environment("local", address.hostname, str(address.port), "", False, None)
    return braintree.BraintreeGateway(
        braintree.Configuration(
            local,
            merchant_id="sandbox_merchant",
            public_key="sandbox_public_key",
            private_key="sandbox_private_key",
        )
    )


def applied_webhooks(app: Any, wanted: Callable[[list[str]], bool]) -> list[str]:
    """The webhook event types recorded and applied (the maintenance queue run by a real
    RQ worker, again and again), once `wanted` holds or 20 s passed."""
    from sqlalchemy import select

    from extensions import db
    from models import ProcessedWebhook
    from tests.helpers import run_maintenance_jobs

    deadline = time.monotonic() + 20
    while True:
        run_maintenance_jobs(app)
        with app.app_context():
            rows = db.session.execute(select(ProcessedWebhook.event_type, ProcessedWebhook.state))
            applied = sorted(t for t, state in rows if state == "applied")
        if wanted(applied) or time.monotonic() > deadline:
            return applied
        time.sleep(0.3)
