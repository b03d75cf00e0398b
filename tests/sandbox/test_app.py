"""The sandbox app puts the parts together: each dialect under its own key, Stripe.js
and the bank's page open (as Stripe serves them), the control API open."""

from __future__ import annotations

from typing import Any

import requests


def test_each_dialect_answers_only_its_own_key_and_the_open_parts_answer_all(
    sandbox: Any,
) -> None:
    url = sandbox.url
    assert requests.get(f"{url}/v1/payment_intents", timeout=5).status_code == 401
    stripe_key = {"Authorization": "Bearer sk_test_sandbox"}
    assert requests.get(f"{url}/v1/payment_intents", headers=stripe_key, timeout=5).ok
    # Braintree's gateway takes its own keys (Basic public:private), not Stripe's.
    braintree = f"{url}/merchants/sandbox_merchant/transactions/none"
    assert requests.get(braintree, headers=stripe_key, timeout=5).status_code == 401
    keys = ("sandbox_public_key", "sandbox_private_key")
    assert requests.get(braintree, auth=keys, timeout=5).status_code == 404
    script = requests.get(f"{url}/js/v3", timeout=5)
    assert script.ok and "javascript" in script.headers["Content-Type"]
    assert requests.get(f"{url}/_sandbox/events", timeout=5).ok
