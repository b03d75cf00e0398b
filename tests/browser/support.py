"""Browser steps shared by the pages tests: to the checkout, typing a card."""

from __future__ import annotations

from typing import Any


def to_checkout(browser: Any, url: str, email: str) -> None:
    """Log in, put a mug in the cart, place the order: the browser is on its checkout."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 15)
    browser.delete_all_cookies()
    browser.get(f"{url}/login")
    browser.find_element(By.NAME, "email").send_keys(email)
    browser.find_element(By.NAME, "password").send_keys("password123")
    browser.find_element(By.CSS_SELECTOR, "form.card button[type=submit]").click()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "li.product")))
    browser.find_element(By.CSS_SELECTOR, 'li[data-sku="MUG"] button').click()
    wait.until(ec.url_contains("/cart"))
    browser.find_element(By.XPATH, "//button[text()='Place order']").click()
    wait.until(ec.url_contains("/checkout"))


def type_card(browser: Any, number: str) -> None:
    """Type a card into the card element that Stripe.js (the sandbox's) mounted."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    field = WebDriverWait(browser, 15).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, "[data-stripe=number]"))
    )
    field.send_keys(number)
    browser.find_element(By.CSS_SELECTOR, "[data-stripe=expiry]").send_keys("12 / 34")
    browser.find_element(By.CSS_SELECTOR, "[data-stripe=cvc]").send_keys("123")
