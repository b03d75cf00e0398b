"""The card entry each provider gets on the pages, and the origins the CSP must allow."""

from __future__ import annotations

from typing import Any

from flask import Flask

from services.payments.cards import card_entry, card_entry_sources


def test_stripe_takes_cards_through_stripe_js(app: Flask) -> None:
    with app.app_context():
        entry = card_entry()
        sources = card_entry_sources()
    assert entry.kind == "stripe_js" and entry.publishable_key == "pk_test_sandbox"
    assert entry.js_url == app.config["STRIPE_JS_URL"]
    sandbox_origin = app.config["STRIPE_API_BASE"]
    assert sources == {"script": sandbox_origin, "frame": sandbox_origin, "connect": sandbox_origin}


def test_the_acquirer_offers_test_tokens_outside_production_only(make_app: Any) -> None:
    development = make_app(PAYMENTS_DEFAULT_PROVIDER="acquirer")
    with development.app_context():
        entry = card_entry()
        assert card_entry_sources() == {}
    assert entry.kind == "token" and ("card_ok", "Test card: approved") in entry.test_cards
    production = make_app(PAYMENTS_DEFAULT_PROVIDER="acquirer", IS_PRODUCTION=True)
    with production.app_context():
        assert card_entry().test_cards == ()
