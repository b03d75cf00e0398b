"""Fixtures of the sandbox's tests."""

from __future__ import annotations

from typing import Any

import pytest
import stripe


@pytest.fixture
def sdk(sandbox: Any) -> stripe.StripeClient:
    """Stripe's own SDK, pointed at the sandbox: the judge of its API."""
    return stripe.StripeClient(
        "sk_test_sandbox",
        base_addresses={"api": sandbox.url},
        max_network_retries=2,
        http_client=stripe.RequestsClient(timeout=10),
    )
