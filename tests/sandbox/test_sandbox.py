"""The sandbox behaves like a real provider, including its failures."""

from __future__ import annotations

import hashlib
import hmac
import subprocess
import sys
import time
from typing import Any

import pytest
import requests

from sandbox.events import acquirer_signature
from tests.sandbox_support import PROJECT_DIR, running_sandbox

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


def test_api_key_is_required(sandbox: Any) -> None:
    response = requests.post(f"{sandbox.url}/v1/payment_intents", data=FORM, timeout=5)
    assert response.status_code == 401
    assert requests.post(f"{sandbox.url}/acquirer/payments", json={}, timeout=5).status_code == 401
    assert sandbox.charges()["data"] == []


def test_replay_returns_the_stored_response(sandbox: Any) -> None:
    first = create(sandbox, "key-1")
    second = create(sandbox, "key-1")
    assert second.headers.get("Idempotent-Replayed") == "true"
    assert second.json() == first.json()
    assert len(sandbox.charges()["data"]) == 1


def test_same_key_different_parameters_is_refused(sandbox: Any) -> None:
    create(sandbox, "key-2")
    response = create(sandbox, "key-2", amount="1001")
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "idempotency_error"


@pytest.mark.parametrize(
    "form",
    [
        {"amount": "-1"},
        {"currency": "euro"},
        {"capture_method": "later"},
        {"payment_method": "pm_nope"},
    ],
)
def test_invalid_requests_are_not_stored_under_the_key(sandbox: Any, form: dict[str, str]) -> None:
    assert create(sandbox, "key-3", **form).status_code == 400
    assert create(sandbox, "key-3").status_code == 200  # the key was not used up


def test_keys_expire_after_their_lifetime(tmp_path: Any) -> None:
    with running_sandbox(str(tmp_path), "--key-lifetime-s", "0.5") as short:
        assert create(short, "key-4").status_code == 200
        time.sleep(0.7)
        replay = create(short, "key-4")
        assert "Idempotent-Replayed" not in replay.headers
        assert len(short.charges()["data"]) == 2  # why replaying after expiry is dangerous


def test_double_charges_are_visible_in_the_ledger(sandbox: Any) -> None:
    body: dict[str, Any] = {
        "reference": "ref-1",
        "amount": 100,
        "currency": "EUR",
        "order_reference": 77,
    }
    for _ in range(2):  # the acquirer has no keys: a blind retry charges twice
        requests.post(
            f"{sandbox.url}/acquirer/payments",
            json=body,
            headers={"X-Api-Key": "acq_test_sandbox"},
            timeout=5,
        )
    doubles = sandbox.charges()["double_charged_orders"]
    assert doubles == [{"dialect": "acquirer", "order_ref": "77", "n": 2}]


def test_webhooks_are_signed_like_stripe(sandbox: Any, webhook_receiver: Any) -> None:
    intent = create(sandbox, "key-5").json()
    wait_for(lambda: webhook_receiver.deliveries)
    delivery = webhook_receiver.deliveries[0]
    assert delivery.path == "/hooks/stripe"
    assert delivery.json["type"] == "payment_intent.succeeded"
    assert delivery.json["data"]["object"]["id"] == intent["id"]
    parts = dict(p.split("=", 1) for p in delivery.headers["Stripe-Signature"].split(","))
    expected = hmac.new(
        b"whsec_sandbox", f"{parts['t']}.".encode() + delivery.body, hashlib.sha256
    ).hexdigest()
    assert hmac.compare_digest(parts["v1"], expected)


def test_acquirer_webhooks_use_their_own_scheme(sandbox: Any, webhook_receiver: Any) -> None:
    requests.post(
        f"{sandbox.url}/acquirer/payments",
        json={"reference": "r", "amount": 5, "currency": "EUR"},
        headers={"X-Api-Key": "acq_test_sandbox"},
        timeout=5,
    )
    wait_for(lambda: webhook_receiver.deliveries)
    delivery = webhook_receiver.deliveries[0]
    assert delivery.path == "/hooks/acquirer"
    timestamp = int(delivery.headers["X-Acquirer-Timestamp"])
    assert delivery.headers["X-Acquirer-Signature"] == acquirer_signature(
        "acqwh_sandbox", delivery.body, timestamp
    )


def test_failed_deliveries_are_retried(sandbox: Any, webhook_receiver: Any) -> None:
    webhook_receiver.fail_next = 1
    create(sandbox, "key-6")
    wait_for(lambda: webhook_receiver.deliveries, timeout_s=5)
    # The sandbox counts the attempt after the receiver answered: wait for its commit.
    wait_for(lambda: sandbox.events()[0]["attempts"] == 2)


def test_duplicated_webhooks(sandbox: Any, webhook_receiver: Any) -> None:
    sandbox.add_fault("webhook_duplicate", copies=3)
    create(sandbox, "key-7")
    wait_for(lambda: len(webhook_receiver.deliveries) == 3)
    assert len({d.json["id"] for d in webhook_receiver.deliveries}) == 1


def test_dropped_webhooks_are_listed_as_undelivered(sandbox: Any, webhook_receiver: Any) -> None:
    sandbox.add_fault("webhook_drop", count=1)
    dropped = create(sandbox, "key-8").json()
    create(sandbox, "key-9", **{"metadata[payment_id]": "10"})
    wait_for(lambda: len(webhook_receiver.deliveries) == 1)
    undelivered = requests.get(
        f"{sandbox.url}/v1/events", params={"delivery_success": "false"}, headers=AUTH, timeout=5
    ).json()["data"]
    assert [e["data"]["object"]["id"] for e in undelivered] == [dropped["id"]]


def test_reordered_webhooks_arrive_out_of_order(sandbox: Any, webhook_receiver: Any) -> None:
    sandbox.add_fault("webhook_delay", seconds=0.8, count=1)
    first = create(sandbox, "key-10").json()
    second = create(sandbox, "key-11", **{"metadata[payment_id]": "11"}).json()
    wait_for(lambda: len(webhook_receiver.deliveries) == 2)
    order = [d.json["data"]["object"]["id"] for d in webhook_receiver.deliveries]
    assert order == [second["id"], first["id"]]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"kind": "boom"}, "kind must be"),
        ({"kind": "latency", "rate": 2}, "rate"),
        ({"kind": "error", "status": 418}, "status"),
        ({"kind": "hang", "count": 0}, "count"),
        ({"kind": "hang", "dialect": "paypal"}, "dialect"),
    ],
)
def test_bad_fault_specs_are_refused(sandbox: Any, spec: dict[str, Any], message: str) -> None:
    response = requests.post(f"{sandbox.url}/_sandbox/faults", json=spec, timeout=5)
    assert response.status_code == 400 and message in response.json()["error"]


def test_latency_fault_slows_answers(sandbox: Any) -> None:
    sandbox.add_fault("latency", ms=400, dialect="stripe")
    started = time.monotonic()
    create(sandbox, "key-12")
    assert time.monotonic() - started >= 0.4


def test_faults_cli_and_help(sandbox: Any) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sandbox", *args],
            cwd=PROJECT_DIR,
            capture_output=True,
            text=True,
            timeout=30,
        )

    assert "commit_timeout" in cli("--help").stdout
    added = cli(
        "faults", "--url", sandbox.url, "add", "error", "status=503", "rate=0.5", "dialect=stripe"
    )
    assert added.returncode == 0, added.stderr
    listed = cli("faults", "--url", sandbox.url, "list")
    assert '"status": 503' in listed.stdout and '"rate": 0.5' in listed.stdout
    assert cli("faults", "--url", sandbox.url, "add", "error", "status=418").returncode == 1
    cli("faults", "--url", sandbox.url, "clear")
    assert requests.get(f"{sandbox.url}/_sandbox/faults", timeout=5).json()["data"] == []


def test_a_request_hung_across_a_reset_does_not_charge_the_new_world(sandbox: Any) -> None:
    import threading

    sandbox.add_fault("hang", seconds=1.0, dialect="stripe", endpoint="create")
    answers: list[Any] = []

    def hung() -> None:
        try:
            answers.append(create(sandbox, "key-hung").status_code)
        except requests.RequestException as exc:
            answers.append(type(exc).__name__)

    thread = threading.Thread(target=hung)
    thread.start()
    time.sleep(0.3)
    sandbox.reset()  # the next test starts while the old request still hangs
    thread.join()
    assert answers and answers[0] != 200  # it was cut off, not processed
    assert sandbox.charges()["data"] == []
