"""Every customer page, at a desktop's 1280 px and a phone's 390 px, in English and
Italian: axe-core finds no critical or serious violation, and nothing scrolls sideways."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from flask import Flask

from services.accounts.customers import create_customer
from tests.admin_support import axe_violations, page_overflow
from tests.helpers import run_jobs, seed_catalog

WIDTHS = (1280, 390)


def _shop(app: Flask, browser: Any, url: str) -> dict[str, str]:
    """A signed-in customer with a paid order, an open one and a top-up review on screen."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.browser.support import to_checkout, type_card

    with app.app_context():
        seed_catalog()
        create_customer("axe@example.com", "password123", app.config["CURRENCIES"])
    wait = WebDriverWait(browser, 15)
    browser.set_window_size(1280, 900)
    to_checkout(browser, url, "axe@example.com")
    checkout = browser.current_url
    type_card(browser, "4242 4242 4242 4242")
    browser.find_element(By.ID, "pay").click()
    wait.until(ec.url_matches(r"/payments/\d+$"))
    payment = browser.current_url
    run_jobs(app)
    paid_order = re.search(r"/orders/(\d+)/checkout", checkout)
    assert paid_order
    to_checkout(browser, url, "axe@example.com")
    return {
        "catalog": f"{url}/",
        "cart": f"{url}/cart",
        "checkout": browser.current_url,
        "payment": payment,
        "orders": f"{url}/orders",
        "order": f"{url}/orders/{paid_order.group(1)}",
        "wallet": f"{url}/wallet",
        "top-up": f"{url}/wallet/topup",
        "not found": f"{url}/orders/999999",
    }


def test_customer_pages_are_accessible_and_fit_a_phone(
    app: Flask, browser: Any, live_server: str, sandbox: Any, axe_script: str, artifacts: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    pages = _shop(app, browser, live_server)
    found: dict[str, Any] = {}
    for language in ("en", "it"):
        browser.get(f"{live_server}/cart")
        for button in browser.find_elements(
            By.CSS_SELECTOR, f'button[name="code"][value="{language}"]'
        ):
            button.click()  # the switcher's form (absent when the page is in it already)
        for width in WIDTHS:
            browser.set_window_size(width, 900)
            for name, page in pages.items():
                browser.get(page)
                problems = axe_violations(browser, axe_script)
                if problems:
                    found[f"{name} {language} {width}px"] = [
                        (v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3])
                        for v in problems
                    ]
                overflow = page_overflow(browser)
                if overflow > 0:
                    found[f"{name} {language} {width}px scrolls sideways"] = overflow
            browser.get(pages["top-up"])
            browser.find_element(By.NAME, "amount").send_keys(
                "12,50" if language == "it" else "12.50"
            )
            browser.find_element(By.CSS_SELECTOR, "form.card button[type=submit]").click()
            WebDriverWait(browser, 15).until(
                ec.presence_of_element_located((By.CSS_SELECTOR, "p.review"))
            )
            if problems := axe_violations(browser, axe_script):
                found[f"top-up review {language} {width}px"] = [v["id"] for v in problems]
            if width == 390:
                browser.save_screenshot(str(artifacts / f"phone-top-up-review-{language}.png"))
    browser.get(pages["checkout"])
    browser.save_screenshot(str(artifacts / "phone-checkout.png"))
    browser.delete_all_cookies()  # the pages of someone who is not signed in
    for width in WIDTHS:
        browser.set_window_size(width, 900)
        for name in ("login", "signup"):
            browser.get(f"{live_server}/{name}")
            if problems := axe_violations(browser, axe_script):
                found[f"{name} {width}px"] = [v["id"] for v in problems]
            if (overflow := page_overflow(browser)) > 0:
                found[f"{name} {width}px scrolls sideways"] = overflow
    assert found == {}, json.dumps(found, indent=1)
