"""A customer clicks through catalog -> cart -> order -> pay in a real browser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask
from sqlalchemy import func, select

from extensions import db
from models import Payment, PaymentStatus
from services.accounts.customers import create_customer
from tests.browser.support import to_checkout, type_card
from tests.helpers import page_says, run_jobs, seed_catalog


def test_click_through_and_double_click_pay_makes_one_payment(
    app: Flask, browser: Any, live_server: str, sandbox: Any, artifacts: Path
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    with app.app_context():
        seed_catalog()
        create_customer("browser@example.com", "password123", app.config["CURRENCIES"])
    wait = WebDriverWait(browser, 15)
    to_checkout(browser, live_server, "browser@example.com")
    browser.save_screenshot(str(artifacts / "checkout.png"))

    type_card(browser, "4242 4242 4242 4242")
    ActionChains(browser).double_click(browser.find_element(By.ID, "pay")).perform()
    wait.until(ec.url_matches(r"/payments/\d+$"))
    assert "Payment in progress" in browser.page_source

    run_jobs(app)
    # The status page refreshes itself until the payment is final.
    wait.until(page_says("h2", "payment succeeded"))
    browser.save_screenshot(str(artifacts / "payment-succeeded.png"))
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Payment)) == 1
        paid = db.session.scalar(select(Payment))
        assert paid is not None and paid.status == PaymentStatus.SUCCEEDED
        assert sandbox.succeeded_charges(str(paid.id)) == 1
