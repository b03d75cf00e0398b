"""A customer pays as the provider's breaker opens: the status page says the
payment is queued, when it is tried next, and that nothing is charged twice; once the
provider is back and the payment sent, the same page says it succeeded. In Chromium,
with axe-core."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from flask import Flask

from models import PaymentStatus
from services.accounts.customers import create_customer
from services.platform.provider_clients import breaker_for
from tests.admin_support import axe_violations
from tests.helpers import (
    charge_payment,
    committed_payment,
    page_says,
    payment,
    seed_catalog,
    tune_breaker,
)


def test_the_status_page_tells_the_truth_while_the_breaker_is_open(
    app: Flask,
    browser: Any,
    live_server: str,
    sandbox: Any,
    make_app: Any,
    axe_script: str,
    artifacts: Path,
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.browser.support import to_checkout, type_card

    with app.app_context():
        seed_catalog()
        create_customer("waits@example.com", "password123", app.config["CURRENCIES"])
    wait = WebDriverWait(browser, 15)
    to_checkout(browser, live_server, "waits@example.com")  # offered: the circuit is closed
    type_card(browser, "4242 4242 4242 4242")

    # While the customer types, the provider fails another customer's payment.
    worker = make_app()  # a worker whose breaker opens at the first failure
    tune_breaker(worker, "stripe", failure_threshold=1)
    sandbox.add_fault("error", status=503, dialect="stripe", endpoint="create")
    with worker.app_context():
        charge_payment(committed_payment(app))
        assert breaker_for("stripe").snapshot()["state"] == "open"
    browser.find_element(By.ID, "pay").click()
    wait.until(ec.url_matches(r"/payments/\d+$"))
    payment_id = int(re.search(r"/payments/(\d+)$", browser.current_url).group(1))  # type: ignore[union-attr]  # the page is the payment's (asserted by the flow)
    with worker.app_context():
        charge_payment(payment_id)  # refused by the open breaker: queued, never sent
    assert payment(app, payment_id).first_sent_at is None
    wait.until(page_says("h2", "Your payment is queued"))
    said = browser.find_element(By.CSS_SELECTOR, ".provider-paused").text
    assert "Stripe" in said and re.search(r"Next try: .+ UTC\.", said), said
    assert "you will not be charged twice" in browser.page_source
    browser.save_screenshot(str(artifacts / "status-breaker-open.png"))
    found = axe_violations(browser, axe_script)
    browser.set_window_size(390, 900)
    found += axe_violations(browser, axe_script)
    browser.set_window_size(1280, 900)

    sandbox.clear_faults()
    with worker.app_context():
        breaker_for("stripe").force("reset", actor="test", reason="the provider is back")
        charge_payment(payment_id)
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    wait.until(page_says("h2", "payment succeeded"))
    assert sandbox.succeeded_charges(str(payment_id)) == 1
    assert found == []
