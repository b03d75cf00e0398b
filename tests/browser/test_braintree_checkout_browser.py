"""A customer pays through Braintree's card entry in a real browser: the page drawn for
Braintree mounts braintree-web's hosted fields (the sandbox's stand-in), the card typed
there becomes a nonce at Braintree, the shop receives only the nonce and the provider's
name, and the payment is charged once at Braintree. In Chromium, with axe-core."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask
from sqlalchemy import select

from extensions import db
from models import Payment, PaymentStatus
from services.accounts.customers import create_customer
from tests.admin_support import axe_violations
from tests.browser.support import to_checkout
from tests.helpers import page_says, run_jobs, seed_catalog, serving


def test_a_card_typed_into_braintrees_fields_is_charged_at_braintree(
    app: Flask,
    make_app: Any,
    browser: Any,
    sandbox: Any,
    axe_script: str,
    artifacts: Path,
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    shop = make_app(PAYMENTS_PROVIDER_WEIGHTS={"stripe": 0, "braintree": 1})
    with shop.app_context():
        seed_catalog()
        create_customer("bt@example.com", "password123", shop.config["CURRENCIES"])
    wait = WebDriverWait(browser, 15)
    with serving(shop) as url:
        to_checkout(browser, url, "bt@example.com")
        number = wait.until(
            ec.presence_of_element_located((By.CSS_SELECTOR, "[data-braintree-name=number]"))
        )
        found = axe_violations(browser, axe_script)
        number.send_keys("4111 1111 1111 1111")
        browser.find_element(By.CSS_SELECTOR, "[data-braintree-name=expirationDate]").send_keys(
            "12 / 34"
        )
        browser.find_element(By.CSS_SELECTOR, "[data-braintree-name=cvv]").send_keys("123")
        # Nothing of the card is in the form: its inputs have no names.
        assert browser.execute_script(
            "return [...new FormData(document.querySelector('form.pay')).keys()]"
        ) == ["csrf_token", "idempotency_key", "provider", "payment_method"]
        browser.save_screenshot(str(artifacts / "checkout-braintree.png"))
        browser.find_element(By.ID, "pay").click()
        wait.until(ec.url_matches(r"/payments/\d+$"))
        run_jobs(shop, "braintree")
        wait.until(page_says("h2", "payment succeeded"))
    with shop.app_context():
        paid = db.session.scalars(select(Payment)).one()
        assert (paid.provider, paid.status) == ("braintree", PaymentStatus.SUCCEEDED)
        assert (paid.payment_method or "").startswith("tokencc_")  # the nonce, never the card
    assert sandbox.succeeded_charges(str(paid.idempotency_key)) == 1
    assert found == []
