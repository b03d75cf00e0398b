"""The HTTP policy against a live sandbox: what is retried, what never is, and for how long."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests
from braintree.util.xml_util import XmlUtil

from devtools.servers import free_port
from providers.http import HttpPolicy, build_session, classify_exception
from providers.outcomes import NotSent, Unknown

FAST = HttpPolicy(
    connect_timeout_s=0.5,
    read_timeout_s=1.0,
    call_budget_s=4.0,
    max_retries=2,
    retry_after_cap_s=2,
    backoff_factor_s=0.05,
    backoff_jitter_s=0.05,
)
STRIPE_AUTH = {"Authorization": "Bearer sk_test_sandbox"}
FORM = {
    "amount": "500",
    "currency": "eur",
    "confirm": "true",
    "automatic_payment_methods[enabled]": "true",
    "automatic_payment_methods[allow_redirects]": "never",
    "payment_method": "pm_card_visa",
    "metadata[payment_id]": "42",
}


def _creates(sandbox: Any) -> int:
    return len(sandbox.requests_log(dialect="stripe", endpoint="create"))


def test_keyed_post_is_retried_on_5xx_and_charges_once(sandbox: Any) -> None:
    sandbox.add_fault("error", status=503, count=2, dialect="stripe", endpoint="create")
    session = build_session(FAST, is_keyed_post_retryable=True)
    response = session.post(
        f"{sandbox.url}/v1/payment_intents",
        data=FORM,
        headers={**STRIPE_AUTH, "Idempotency-Key": "k-5xx"},
        timeout=FAST.timeout,
    )
    assert response.status_code == 200
    assert _creates(sandbox) == 3
    assert sandbox.succeeded_charges("42") == 1


def test_post_without_idempotency_key_is_never_repeated(sandbox: Any) -> None:
    sandbox.add_fault("error", status=503, dialect="stripe", endpoint="create")
    session = build_session(FAST, is_keyed_post_retryable=True)
    response = session.post(
        f"{sandbox.url}/v1/payment_intents", data=FORM, headers=STRIPE_AUTH, timeout=FAST.timeout
    )
    assert response.status_code == 503
    assert _creates(sandbox) == 1


def test_keyed_post_is_not_repeated_when_the_provider_forbids_keys(sandbox: Any) -> None:
    sandbox.add_fault("error", status=503, dialect="stripe", endpoint="create")
    session = build_session(FAST, is_keyed_post_retryable=False)
    session.post(
        f"{sandbox.url}/v1/payment_intents",
        data=FORM,
        headers={**STRIPE_AUTH, "Idempotency-Key": "k-none"},
        timeout=FAST.timeout,
    )
    assert _creates(sandbox) == 1


def test_get_is_retried_on_5xx(sandbox: Any) -> None:
    sandbox.add_fault("error", status=502, count=1, dialect="stripe", endpoint="retrieve")
    session = build_session(FAST, is_keyed_post_retryable=False)
    response = session.get(
        f"{sandbox.url}/v1/payment_intents/pi_missing", headers=STRIPE_AUTH, timeout=FAST.timeout
    )
    assert response.status_code == 404  # the retry got through to the real answer
    assert len(sandbox.requests_log(endpoint="retrieve")) == 2


def test_retry_after_is_honoured(sandbox: Any) -> None:
    sandbox.add_fault(
        "error", status=429, retry_after=1, count=1, dialect="stripe", endpoint="create"
    )
    session = build_session(FAST, is_keyed_post_retryable=True)
    started = time.monotonic()
    response = session.post(
        f"{sandbox.url}/v1/payment_intents",
        data=FORM,
        headers={**STRIPE_AUTH, "Idempotency-Key": "k-429"},
        timeout=FAST.timeout,
    )
    assert response.status_code == 200
    log = sandbox.requests_log(endpoint="create")
    assert len(log) == 2
    assert log[1]["at"] - log[0]["at"] >= 0.95  # waited the server's Retry-After
    assert time.monotonic() - started < FAST.call_budget_s


def test_retry_after_beyond_the_cap_returns_the_429(sandbox: Any) -> None:
    # Retry-After 30 s is capped at 2 s per wait, and the 4 s budget stops the loop.
    sandbox.add_fault("error", status=429, retry_after=30, dialect="stripe", endpoint="create")
    session = build_session(FAST, is_keyed_post_retryable=True)
    started = time.monotonic()
    response = session.post(
        f"{sandbox.url}/v1/payment_intents",
        data=FORM,
        headers={**STRIPE_AUTH, "Idempotency-Key": "k-429-long"},
        timeout=FAST.timeout,
    )
    assert response.status_code == 429
    assert time.monotonic() - started <= FAST.call_budget_s
    assert sandbox.succeeded_charges("42") == 0


def test_total_budget_bounds_a_hanging_provider(sandbox: Any) -> None:
    sandbox.add_fault("hang", seconds=3, dialect="stripe", endpoint="retrieve")
    session = build_session(FAST, is_keyed_post_retryable=False)
    started = time.monotonic()
    with pytest.raises(requests.RequestException) as caught:
        session.get(
            f"{sandbox.url}/v1/payment_intents/pi_x", headers=STRIPE_AUTH, timeout=FAST.timeout
        )
    elapsed = time.monotonic() - started
    assert isinstance(classify_exception(caught.value), Unknown)
    # Each attempt waits the 1 s read timeout; the 4 s budget allows at most 3 of them.
    assert elapsed <= FAST.call_budget_s + 0.5
    assert 2 <= len(sandbox.requests_log(endpoint="retrieve")) <= 3


def test_refused_connection_is_not_sent() -> None:
    session = build_session(FAST, is_keyed_post_retryable=True)
    with pytest.raises(requests.RequestException) as caught:
        session.post(
            f"http://127.0.0.1:{free_port()}/v1/payment_intents",
            data=FORM,
            headers={"Idempotency-Key": "k"},
            timeout=FAST.timeout,
        )
    assert isinstance(classify_exception(caught.value), NotSent)


def test_unresolvable_host_is_not_sent() -> None:
    session = build_session(FAST, is_keyed_post_retryable=False)
    with pytest.raises(requests.RequestException) as caught:
        session.post("http://no-such-host.invalid/x", timeout=FAST.timeout)
    assert isinstance(classify_exception(caught.value), NotSent)


def test_reset_after_sending_is_unknown(sandbox: Any) -> None:
    sandbox.add_fault("reset_after", dialect="braintree", endpoint="sale")
    session = build_session(FAST, is_keyed_post_retryable=False)
    sale = XmlUtil.xml_from_dict(
        {
            "transaction": {
                "amount": "1.00",
                "payment_method_nonce": "fake-valid-nonce",
                "order_id": "r1",
            }
        }
    )
    with pytest.raises(requests.RequestException) as caught:
        session.post(
            f"{sandbox.url}/merchants/sandbox_merchant/transactions",
            data=sale.encode(),
            headers={"Content-Type": "application/xml", "X-ApiVersion": "6"},
            auth=("sandbox_public_key", "sandbox_private_key"),
            timeout=FAST.timeout,
        )
    assert isinstance(classify_exception(caught.value), Unknown)
    assert sandbox.succeeded_charges("r1") == 1  # it was charged: "unknown" was right


def test_the_proxy_environment_is_read_once_per_host(monkeypatch: Any) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "inside.example")
    session = build_session(FAST, is_keyed_post_retryable=False)
    outside = session.merge_environment_settings("https://api.example/v1/x", {}, None, None, None)
    inside = session.merge_environment_settings("https://inside.example/v1", {}, None, None, None)
    assert outside["proxies"].get("https") == "http://proxy.example:3128"
    assert "https" not in inside["proxies"]  # NO_PROXY, as requests reads it
    outside["proxies"]["https"] = "changed by a caller"
    monkeypatch.setenv("HTTPS_PROXY", "http://other.example:3128")  # a process's own: fixed
    again = session.merge_environment_settings("https://api.example/v1/y", {}, None, None, None)
    assert again["proxies"].get("https") == "http://proxy.example:3128"
    given = session.merge_environment_settings(
        "https://api.example/v1/y", {"https": "http://given:1"}, None, None, None
    )
    assert given["proxies"]["https"] == "http://given:1"  # a request's own proxies win


def test_a_netrc_file_never_lends_a_request_credentials(monkeypatch: Any, tmp_path: Any) -> None:
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine api.example login someone password from-a-file\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    session = build_session(FAST, is_keyed_post_retryable=False)
    prepared = session.prepare_request(requests.Request("POST", "https://api.example/v1/x"))
    assert "Authorization" not in prepared.headers  # plain requests would send the file's
    given = session.prepare_request(
        requests.Request("POST", "https://api.example/v1/x", headers=STRIPE_AUTH)
    )
    assert given.headers["Authorization"] == STRIPE_AUTH["Authorization"]
