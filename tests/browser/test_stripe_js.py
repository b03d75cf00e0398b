"""The sandbox's stand-in Stripe.js in a real browser: a card typed into the mounted
element becomes a payment method at the provider; the page never holds a form field
that could post the number to the shop."""

from __future__ import annotations

from typing import Any

from flask import Flask

from tests.helpers import serving


def test_a_typed_card_becomes_a_payment_method(browser: Any, sandbox: Any) -> None:
    from selenium.webdriver.common.by import By

    page = (
        '<form id="shop"><div id="card"></div></form>'
        f'<script src="{sandbox.url}/js/v3"></script>'
        "<script>var stripe = Stripe('pk_test_sandbox');"
        "var card = stripe.elements().create('card'); card.mount('#card');</script>"
    )
    shop = Flask("shop")  # a page on another local origin, like the shop's checkout
    shop.add_url_rule("/", "page", lambda: page)
    with serving(shop) as url:
        browser.get(url)
        _pay(browser, By)


def _pay(browser: Any, by: Any) -> None:
    browser.find_element(by.CSS_SELECTOR, "[data-stripe=number]").send_keys("4242 4242 4242 4242")
    browser.find_element(by.CSS_SELECTOR, "[data-stripe=expiry]").send_keys("12 / 34")
    browser.find_element(by.CSS_SELECTOR, "[data-stripe=cvc]").send_keys("123")
    result = browser.execute_async_script(
        "var done = arguments[0];"
        "stripe.createPaymentMethod({type: 'card', card: card}).then(done, done);"
    )
    assert result["paymentMethod"]["id"].startswith("pm_")
    assert result["paymentMethod"]["card"]["last4"] == "4242"
    # Nothing of the card would be posted with the shop's form: the inputs have no names.
    assert browser.execute_script("return new FormData(document.forms.shop).keys().next().done")
