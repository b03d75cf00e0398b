"""Stripe's idempotency layer in the sandbox: replays, other parameters, expiry."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.sandbox_support import create, running_sandbox


def test_replay_returns_the_stored_response(sandbox: Any) -> None:
    first = create(sandbox, "key-1")
    second = create(sandbox, "key-1")
    assert second.headers.get("Idempotent-Replayed") == "true"
    assert second.json() == first.json()
    assert len(sandbox.charges()["data"]) == 1


def test_a_500_stored_after_processing_is_replayed_though_the_charge_happened(
    sandbox: Any,
) -> None:
    sandbox.add_fault("error", status=500, phase="stored", count=1, dialect="stripe")
    first = create(sandbox, "key-500")
    replayed = create(sandbox, "key-500")
    assert first.status_code == replayed.status_code == 500
    assert replayed.headers.get("Idempotent-Replayed") == "true"
    assert replayed.headers.get("Stripe-Should-Retry") == "false"
    assert len(sandbox.charges(status="succeeded")["data"]) == 1  # the money moved


def test_same_key_different_parameters_is_refused(sandbox: Any) -> None:
    create(sandbox, "key-2")
    response = create(sandbox, "key-2", amount="1001")
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "idempotency_error"


def test_the_same_parameters_in_another_encoding_are_a_replay(sandbox: Any) -> None:
    """Stripe compares a key's parameters, not their form encoding: `expand[0]=` (the
    SDK's) and `expand[]=` are the same request; another value is not."""
    first = create(sandbox, "key-3", **{"expand[0]": "payment_method"})
    again = create(sandbox, "key-3", **{"expand[]": "payment_method"})
    assert again.status_code == 200 and again.headers.get("Idempotent-Replayed") == "true"
    assert again.json()["id"] == first.json()["id"]
    other = create(sandbox, "key-3", **{"expand[]": "customer"})
    assert other.status_code == 400 and other.json()["error"]["type"] == "idempotency_error"


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
    with running_sandbox(str(tmp_path), "--key-lifetime-s", "60") as short:
        assert create(short, "key-4").status_code == 200
        short.age_keys(59)
        assert "Idempotent-Replayed" in create(short, "key-4").headers  # still kept
        short.age_keys(2)  # the key is 61 s old: past its lifetime
        replay = create(short, "key-4")
        assert "Idempotent-Replayed" not in replay.headers
        assert len(short.charges()["data"]) == 2  # why replaying after expiry is dangerous


@pytest.mark.parametrize("body", [{}, {"seconds": "60"}, {"seconds": True}, {"seconds": -1}])
def test_aging_keys_takes_only_a_number_of_seconds(sandbox: Any, body: dict[str, Any]) -> None:
    response = requests.post(f"{sandbox.url}/_sandbox/keys/age", json=body, timeout=5)
    assert response.status_code == 400
    assert "seconds" in response.json()["error"]
