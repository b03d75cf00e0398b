"""An Italian customer tops up "12,50" in a real browser: the review shows 12,50 €, and
after it the card is charged 1250 cents, once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask
from sqlalchemy import select

from extensions import db
from models import Payment, PaymentPurpose
from services.accounts.customers import create_customer
from tests.browser.support import type_card
from tests.helpers import page_says, run_jobs


def test_an_italian_top_up_of_12_50_is_reviewed_then_charged_1250_cents(
    app: Flask, browser: Any, live_server: str, sandbox: Any, artifacts: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    with app.app_context():
        create_customer("italia@example.com", "password123", app.config["CURRENCIES"])
    wait = WebDriverWait(browser, 15)
    browser.delete_all_cookies()
    browser.get(f"{live_server}/login")
    browser.find_element(By.NAME, "email").send_keys("italia@example.com")
    browser.find_element(By.NAME, "password").send_keys("password123")
    browser.find_element(By.CSS_SELECTOR, "form.card button[type=submit]").click()
    wait.until(ec.url_to_be(f"{live_server}/"))
    browser.find_element(By.CSS_SELECTOR, 'button[name="code"][value="it"]').click()  # the switcher
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Catalogo"))
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "it"

    browser.get(f"{live_server}/wallet/topup?currency=EUR")
    browser.find_element(By.NAME, "amount").send_keys("12,50")
    browser.find_element(By.CSS_SELECTOR, "form.card button[type=submit]").click()
    review = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "p.review")))
    assert review.text == "Ti verranno addebitati 12,50 €."
    browser.save_screenshot(str(artifacts / "topup-review-it.png"))
    with app.app_context():  # nothing is charged before the customer confirms
        assert db.session.scalar(select(Payment)) is None

    type_card(browser, "4242 4242 4242 4242")
    browser.find_element(By.CSS_SELECTOR, "form.card button[type=submit]").click()
    wait.until(ec.url_matches(r"/payments/\d+$"))
    run_jobs(app)
    wait.until(page_says("h2", "pagamento è riuscito"))
    with app.app_context():
        topup = db.session.scalar(select(Payment))
        assert topup is not None and topup.purpose == PaymentPurpose.WALLET_TOPUP
        assert (topup.amount_minor, topup.currency) == (1250, "EUR")
    charged = sandbox.charges(payment_ref=str(topup.id), status="succeeded")["data"]
    assert [(c["amount"], c["currency"].upper()) for c in charged] == [(1250, "EUR")]
