"""Stripe's balance transactions as our client reads them: each field checked before it
is believed, the charge's PaymentIntent taken from the expanded source, and every page
of a day read through the sandbox."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import stripe

from providers.stripe.balance import balance_txn
from services.platform.provider_clients import provider_for
from tests.sandbox_support import sdk_charge

GOOD = {
    "id": "txn_1",
    "object": "balance_transaction",
    "amount": 1400,
    "fee": 46,
    "net": 1354,
    "currency": "eur",
    "created": 1765000000,
    "type": "charge",
    "reporting_category": "charge",
    "source": {"id": "ch_1", "object": "charge", "payment_intent": "pi_1"},
}


def test_a_charge_is_read_with_its_fee_and_its_payment_intent() -> None:
    txn = balance_txn(GOOD)
    assert txn.problem is None
    assert (txn.txn_id, txn.type, txn.source_id, txn.payment_ref) == (
        "txn_1",
        "charge",
        "ch_1",
        "pi_1",
    )
    assert (txn.amount_minor, txn.fee_minor, txn.currency) == (1400, 46, "EUR")
    assert txn.created_at == datetime.fromtimestamp(1765000000, UTC)
    unexpanded = balance_txn({**GOOD, "source": "ch_1"})
    assert (unexpanded.source_id, unexpanded.payment_ref, unexpanded.problem) == (
        "ch_1",
        None,
        None,
    )


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"id": None}, "no id"),
        ({"id": "txn 1; drop"}, "no id"),
        ({"amount": "1400"}, "not a whole number"),
        ({"fee": 4.6}, "not a whole number"),
        ({"amount": True}, "not a whole number"),
        ({"created": None}, "not a whole number"),
        ({"net": 1400}, "net is not amount less fee"),
        ({"currency": "euro"}, "no currency"),
        ({"currency": "EUR"}, "no currency"),
        ({"source": None}, "no source"),
        ({"source": {"object": "charge"}}, "no source"),
    ],
)
def test_an_item_that_cannot_be_believed_says_why(change: dict[str, Any], problem: str) -> None:
    assert problem in (balance_txn({**GOOD, **change}).problem or "")


def test_a_day_is_read_page_by_page_through_the_sandbox(
    app_ctx: Any, sandbox: Any, sdk: stripe.StripeClient
) -> None:
    intents = [sdk_charge(sdk, 500 + n) for n in range(3)]
    client: Any = provider_for("stripe")
    now = datetime.now(UTC)
    first = client.balance_page(now - timedelta(hours=1), now + timedelta(hours=1))
    assert [t.payment_ref for t in first.items] == [i.id for i in reversed(intents)]
    assert first.next_cursor is None and all(t.problem is None for t in first.items)
    assert client.balance_page(now + timedelta(hours=1), now + timedelta(hours=2)).items == []
