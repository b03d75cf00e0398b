"""Which intents of a list may be ours: by our metadata, and, without any metadata, by
our amount, currency and customer (an intent whose metadata an operator removed)."""

from __future__ import annotations

from typing import Any

import pytest

from providers.stripe.lookups import _may_be_ours
from tests.providers.stripe.support import charge_request


def _intent(**fields: Any) -> dict[str, Any]:
    return {"id": "pi_1", "amount": 2500, "currency": "eur", "metadata": {}, **fields}


@pytest.mark.parametrize(
    ("intent", "customer", "may_be"),
    [
        (_intent(), None, True),
        (_intent(customer="cus_1"), "cus_1", True),
        (_intent(customer="cus_2"), "cus_1", False),  # another customer's
        (_intent(amount=2501), None, False),
        (_intent(currency="usd"), None, False),
        (_intent(metadata={"payment_id": "8"}), None, False),  # another payment's, by its word
        (_intent(id=None), None, False),
    ],
)
def test_an_intent_without_metadata_may_be_ours(
    intent: dict[str, Any], customer: str | None, may_be: bool
) -> None:
    request = charge_request(payment_id=7, provider_customer_id=customer)
    assert _may_be_ours(request, intent) is may_be
