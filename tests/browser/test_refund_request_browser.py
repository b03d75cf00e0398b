"""A customer asks for a refund on their order page; a refunder approves it in the
console; the refund reaches the sandbox and the customer's email says so. In Chromium,
with axe-core on each page on the way."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from flask import Flask

from services.accounts.customers import create_customer
from tests.admin_support import axe_violations, fill_admin_login, make_admin
from tests.helpers import page_says, run_jobs, run_notification_jobs, sandbox_refunds, seed_catalog


def test_asked_on_the_order_page_approved_in_the_console_and_emailed(
    app: Flask,
    browser: Any,
    live_server: str,
    sandbox: Any,
    mail_sink: Any,
    axe_script: str,
    artifacts: Path,
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.browser.support import to_checkout, type_card

    with app.app_context():
        seed_catalog()
        create_customer("asks@example.com", "password123", app.config["CURRENCIES"])
    make_admin(app, "refunder", "refunder@example.com")
    wait = WebDriverWait(browser, 15)
    to_checkout(browser, live_server, "asks@example.com")
    order_id = re.search(r"/orders/(\d+)/checkout", browser.current_url).group(1)  # type: ignore[union-attr]  # the page is the checkout (asserted by the flow)
    type_card(browser, "4242 4242 4242 4242")
    browser.find_element(By.ID, "pay").click()
    wait.until(ec.url_matches(r"/payments/\d+$"))
    run_jobs(app)
    wait.until(page_says("h2", "payment succeeded"))

    browser.get(f"{live_server}/orders/{order_id}")
    found = {"order page": axe_violations(browser, axe_script)}
    browser.find_element(By.ID, "refund-reason").send_keys("The handle came off on day one.")
    browser.find_element(By.CSS_SELECTOR, "form.refund-request-form button").click()
    wait.until(page_says(".refund-request", "has not answered yet"))
    found["order page, asked"] = axe_violations(browser, axe_script)
    browser.save_screenshot(str(artifacts / "refund-request-asked.png"))

    browser.delete_all_cookies()
    browser.get(f"{live_server}/admin/login")
    fill_admin_login(browser, "refunder@example.com")
    wait.until(ec.title_contains("Overview"))
    browser.get(f"{live_server}/admin/refund_requests/")
    assert "The handle came off on day one." in browser.page_source
    found["console queue"] = axe_violations(browser, axe_script)
    browser.find_element(By.CSS_SELECTOR, "form.approve-request input[name=confirm]").click()
    browser.find_element(By.CSS_SELECTOR, "form.approve-request button").click()
    wait.until(page_says(".alert", "approved: refund #"))
    found["console, approved"] = axe_violations(browser, axe_script)
    browser.save_screenshot(str(artifacts / "refund-request-approved.png"))

    run_jobs(app)
    run_notification_jobs(app)
    [refunded] = sandbox_refunds(sandbox)
    assert refunded["amount"] == 1400  # one mug: all of the order
    [email] = [
        m
        for m in mail_sink.messages()
        if m["To"] == "asks@example.com" and "refund" in m["Subject"].lower()
    ]
    text = email.get_body(("plain",)).get_content()
    assert "€14.00" in text and f"Order #{order_id}" in text and "Visa ending in 4242" in text
    assert {k: v for k, v in found.items() if v} == {}
