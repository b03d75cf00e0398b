"""Which provider a payment goes to: by weight among those offered on a page (never one
whose circuit is open, never one whose account does not take the currency), else the one
named, else the one whose token shape the card token has; the shop's smallest card
payment is the largest provider minimum."""

from __future__ import annotations

import random
from typing import Any

import pytest
from flask import Flask

from services.payments import routing
from services.platform.errors import ConflictError, UnprocessableError
from services.platform.provider_clients import breaker_for

BOTH = {"stripe": 3, "braintree": 1}


def test_pages_share_payments_out_by_weight(make_app: Any) -> None:
    shop = make_app(PAYMENTS_PROVIDER_WEIGHTS=BOTH)
    rng = random.Random(7)
    with shop.app_context():
        drawn = [routing.choose("EUR", rng=rng) for _ in range(400)]
    assert 240 <= drawn.count("stripe") <= 360  # 3 in 4, within a wide margin
    assert drawn.count("braintree") == 400 - drawn.count("stripe")


def test_an_open_circuit_or_another_currency_is_not_offered(make_app: Any) -> None:
    shop = make_app(PAYMENTS_PROVIDER_WEIGHTS=BOTH)
    with shop.app_context():
        assert routing.offered("EUR") == ["stripe", "braintree"]
        assert routing.offered("USD") == ["stripe"]  # Braintree's account takes EUR
        breaker_for("stripe").force("open", actor="test", reason="down")
        assert routing.offered("EUR") == ["braintree"]
        assert routing.choose("USD") is None  # nothing to offer: the page says so
        breaker_for("stripe").force("closed", actor="test", reason="up")
        assert routing.choose("EUR", "braintree") == "braintree"  # ?provider= on the page
        assert routing.choose("USD", "braintree") == "stripe"  # asked, not offered: by weight


def test_weight_zero_is_never_offered_but_taken_when_named(app: Flask) -> None:
    with app.app_context():
        assert routing.offered("EUR") == ["stripe"]  # the default: the default provider
        assert routing.provider_of("braintree", "fake-valid-nonce", "EUR") == "braintree"


@pytest.mark.parametrize(
    ("asked", "card", "expected"),
    [
        (None, "pm_card_visa", "stripe"),
        ("", "fake-valid-nonce", "braintree"),  # the token's shape names it
        (None, "tokencc_sb_abc", "braintree"),
        (None, "4242424242424242", "stripe"),  # none fits: the default, whose parse refuses
        ("stripe", "fake-valid-nonce", "stripe"),  # named: the parse refuses the nonce
    ],
)
def test_the_provider_of_a_new_payment(app: Flask, asked: Any, card: str, expected: str) -> None:
    with app.app_context():
        assert routing.provider_of(asked, card, "EUR") == expected


@pytest.mark.parametrize(
    ("asked", "currency", "code"),
    [
        ("paypal", "EUR", "provider_invalid"),
        (7, "EUR", "provider_invalid"),
        ("braintree", "USD", "provider_currency_invalid"),
        (None, "GBP", "provider_currency_invalid"),  # a nonce names Braintree: EUR only
    ],
)
def test_a_provider_that_cannot_take_the_payment_is_refused(
    app: Flask, asked: Any, currency: str, code: str
) -> None:
    with app.app_context(), pytest.raises(UnprocessableError) as refused:
        routing.provider_of(asked, "fake-valid-nonce", currency)
    assert refused.value.code == code


def test_an_orders_currency_not_served_is_a_conflict_with_the_order(app: Flask) -> None:
    with app.app_context(), pytest.raises(ConflictError) as refused:
        routing.provider_of("braintree", "fake-valid-nonce", "USD", is_orders=True)
    assert refused.value.code == "currency_not_served" and refused.value.status == 409


def test_the_lean_statements_provider_never_guesses(app: Flask) -> None:
    with app.app_context():
        assert routing.lean_provider(None, "pm_card_visa") == "stripe"
        assert routing.lean_provider(None, "fake-valid-nonce") == "braintree"
        assert routing.lean_provider("braintree", "pm_card_visa") == "braintree"
        for asked, card in (("paypal", "pm_card_visa"), (1, "pm_card_visa"), (None, "x y")):
            assert routing.lean_provider(asked, card) is None  # the ORM path answers


def test_the_shops_smallest_card_payment_is_the_largest_provider_minimum(app: Flask) -> None:
    with app.app_context():
        assert routing.minimum_minor("EUR") == 50  # Stripe's; Braintree's is 1
        routing.check_minimum(50, "EUR")
        with pytest.raises(UnprocessableError, match=r"card payments are at least €0\.50"):
            routing.check_minimum(49, "EUR")
