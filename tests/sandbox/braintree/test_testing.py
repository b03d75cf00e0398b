"""Braintree's published test values: which nonce is which card, which amount declines,
fails or is rejected, and which declines at settlement."""

from __future__ import annotations

from decimal import Decimal

import pytest

from sandbox.braintree import testing


@pytest.mark.parametrize(
    ("amount", "status", "code"),
    [
        ("1999.99", "authorized", None),
        ("2000.00", "processor_declined", "2000"),
        ("2999.99", "processor_declined", "2999"),
        ("3000.50", "failed", "3000"),
        ("3001.00", "authorized", None),
        ("5001.00", "gateway_rejected", None),
        ("5001.01", "authorized", None),
    ],
)
def test_an_amount_decides_a_sale_as_published(amount: str, status: str, code: str | None) -> None:
    outcome = testing.sale_outcome(Decimal(amount), testing.VISA)
    assert outcome.status == status
    assert outcome.fields.get("processor_response_code") == code


def test_a_nonce_stands_for_its_card_and_an_unknown_one_for_none() -> None:
    assert testing.card_of("fake-valid-mastercard-nonce").details()["last_4"] == "4444"  # type: ignore[union-attr]  # a known nonce
    declined = testing.card_of("fake-processor-declined-visa-nonce")
    assert declined is not None
    assert testing.sale_outcome(Decimal("10.00"), declined).status == "processor_declined"
    assert testing.card_of("fake-nonce-of-nobody") is None and testing.card_of(7) is None
    # the card's number never leaves it: only its bin and last four
    assert "4111111111111111" not in str(
        {k: v for k, v in testing.VISA.details().items() if k != "unique_number_identifier"}
    )


@pytest.mark.parametrize(
    ("amount", "declined"),
    [("4000.99", None), ("4001.50", "4001"), ("4002.00", None), ("4500.00", "4500")],
)
def test_settlement_declines_the_published_amounts(amount: str, declined: str | None) -> None:
    assert testing.settlement_decline(Decimal(amount)) == declined
