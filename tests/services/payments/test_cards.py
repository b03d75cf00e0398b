"""The card entry each provider gets on the pages, and the origins the CSP must allow."""

from __future__ import annotations

from typing import Any

from flask import Flask, render_template_string

from providers.registry import PROVIDERS
from services.payments.cards import UNAVAILABLE, card_entry, card_entry_sources, entry_of
from services.platform.provider_clients import breaker_for
from tests.providers import toy


def test_stripe_takes_cards_through_stripe_js(app: Flask) -> None:
    with app.app_context():
        entry = card_entry("EUR")
    assert entry.provider == "stripe"  # the default provider's weight, unset
    assert entry.kind == "stripe_js" and entry.publishable_key == "pk_test_sandbox"
    assert entry.js_url == app.config["STRIPE_JS_URL"]


def test_braintree_takes_cards_through_braintree_web(make_app: Any) -> None:
    shop = make_app(PAYMENTS_PROVIDER_WEIGHTS={"stripe": 0, "braintree": 1})
    with shop.app_context():
        entry = card_entry("EUR")
    assert (entry.provider, entry.kind) == ("braintree", "braintree_js")
    assert entry.js_url == shop.config["BRAINTREE_JS_URL"]
    assert entry.publishable_key == shop.config["BRAINTREE_TOKENIZATION_KEY"]
    assert entry.test_cards == ()  # hosted fields take test card numbers, not a select


def test_the_csp_allows_each_enabled_providers_card_entry_and_nothing_else(
    app: Flask, make_app: Any
) -> None:
    sandbox = app.config["STRIPE_API_BASE"]  # every provider's sandbox in tests
    with app.app_context():
        assert card_entry_sources() == {
            "script": [sandbox],
            "frame": [sandbox],
            "connect": [sandbox],
        }
    braintree_only = make_app(
        PAYMENTS_PROVIDERS=["braintree"],
        PAYMENTS_PROVIDER_WEIGHTS={"braintree": 1},
        BRAINTREE_API_BASE="http://127.0.0.1:1",
    )
    with braintree_only.app_context():
        assert card_entry_sources() == {"script": [sandbox], "connect": ["http://127.0.0.1:1"]}


def test_no_card_entry_while_every_offered_circuit_is_open(app: Flask) -> None:
    with app.app_context():
        breaker_for("stripe").force("open", actor="test", reason="down")
        assert card_entry("EUR") == UNAVAILABLE
        assert card_entry("EUR", "braintree") == UNAVAILABLE  # weight 0: never on a page


def test_a_provider_without_a_card_script_offers_its_test_tokens_outside_production(
    app: Flask, make_app: Any, monkeypatch: Any
) -> None:
    """The spec's default card entry (a token): a select of its test tokens while
    developing, a field for the token in production; never a card number either way."""
    monkeypatch.setitem(PROVIDERS, "toy", toy.SPEC)
    page = '{% from "checkout/_card.html" import card_fields %}{{ card_fields(card) }}'
    with app.test_request_context():
        entry = entry_of("toy")
        developing = render_template_string(page, card=entry)
    assert entry.test_cards == (("card_toy", "Test card: approved"),)
    assert '<select name="payment_method">' in developing and 'value="card_toy"' in developing
    assert 'name="provider" value="toy"' in developing
    production = make_app(IS_PRODUCTION=True)
    with production.test_request_context():
        entry = entry_of("toy")
        live = render_template_string(page, card=entry)
    assert entry.test_cards == () and "<select" not in live
    assert '<input name="payment_method" required' in live
