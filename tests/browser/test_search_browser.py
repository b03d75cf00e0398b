"""An operator asks "did payment X go through?": types its idempotency key into the
dashboard's search box and reads the verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask

from tests.admin_support import fill_admin_login, make_admin
from tests.helpers import charge_payment, committed_payment, payment


def test_the_verdict_from_an_idempotency_key(
    app: Flask, browser: Any, live_server: str, sandbox: Any, artifacts: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    make_admin(app)
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    key = str(payment(app, payment_id).idempotency_key)
    wait = WebDriverWait(browser, 15)
    browser.delete_all_cookies()
    browser.get(f"{live_server}/admin/login")
    fill_admin_login(browser)
    box = wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, ".dashboard-search input")))
    box.send_keys(key)
    box.submit()
    verdict = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".verdict")))
    assert verdict.text.startswith("Charged once: pi_")
    assert "confirmed by the provider" in verdict.text
    assert browser.current_url.endswith(f"/admin/payment/{payment_id}")
    browser.save_screenshot(str(artifacts / "search-verdict.png"))
