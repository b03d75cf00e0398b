"""An operator at 3 a.m.: logs in, sees the open breaker and the unknown payment, fixes it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import requests
import time_machine
from flask import Flask

from extensions import db
from models import PaymentStatus, Refund
from services.movements import lifecycle
from services.payments.kind import CHARGE
from tests.admin_support import fill_admin_login, make_admin
from tests.factories import make_customer, make_order, make_payment
from tests.helpers import charge_payment, charged_for, payment, rows, run_jobs, tune_breaker


def test_operator_sees_the_outage_and_reconciles(
    app: Flask, browser: Any, live_server: str, sandbox: Any, artifacts: Path, make_app: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    make_admin(app)
    fault = sandbox.add_fault("hang", seconds=3, dialect="stripe", endpoint="create")
    worker_app = make_app()  # a worker whose breaker opens at the first failure
    tune_breaker(worker_app, "stripe", failure_threshold=1)
    with worker_app.app_context():
        created = make_payment(make_order(make_customer()))
        db.session.commit()
        payment_id = created.id
        charge_payment(payment_id)  # times out: unknown, and the breaker opens
    requests.delete(f"{sandbox.url}/_sandbox/faults/{fault}", timeout=5)  # provider is back

    wait = WebDriverWait(browser, 15)
    browser.delete_all_cookies()
    browser.get(f"{live_server}/admin/")
    wait.until(ec.url_contains("/admin/login"))
    fill_admin_login(browser)
    breaker = wait.until(
        ec.presence_of_element_located((By.CSS_SELECTOR, '.breaker[data-provider="stripe"]'))
    )
    assert breaker.get_attribute("data-state") == "open"
    unknown = browser.find_element(By.CSS_SELECTOR, '[data-status="unknown"] .count')
    assert unknown.text == "1"
    browser.save_screenshot(str(artifacts / "admin-overview.png"))

    form = breaker.find_element(By.TAG_NAME, "form")  # the provider is back: reset it
    form.find_element(By.CSS_SELECTOR, 'select[name="action"] option[value="reset"]').click()
    form.find_element(By.NAME, "reason").send_keys("provider recovered")
    form.find_element(By.NAME, "confirm").click()
    form.find_element(By.TAG_NAME, "button").click()
    wait.until(
        ec.presence_of_element_located(
            (By.CSS_SELECTOR, '.breaker[data-provider="stripe"][data-state="closed"]')
        )
    )

    browser.get(f"{live_server}/admin/unknown/")
    row = wait.until(
        ec.presence_of_element_located((By.CSS_SELECTOR, f'tr[data-payment="{payment_id}"]'))
    )
    browser.save_screenshot(str(artifacts / "admin-unknown-payments.png"))
    row.find_element(By.XPATH, ".//button[text()='Reconcile now']").click()
    wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".alert"), "lookup is queued"))
    run_jobs(app)
    browser.get(f"{live_server}/admin/unknown/")
    wait.until(
        ec.text_to_be_present_in_element(
            (By.CSS_SELECTOR, ".alert-success"), "No payment is unknown or waiting for a person"
        )
    )
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(payment_id)) == 1


def test_the_overview_draws_the_last_hour(
    app: Flask, browser: Any, live_server: str, sandbox: Any, artifacts: Path
) -> None:
    """Payments that succeeded and failed, a breaker that opened, a queue that filled: the
    overview's four pictures, drawn from our own data (the README's tour shows this)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    from services.backoffice.dashboard import sample_health
    from services.platform.provider_clients import breaker_for

    make_admin(app)
    samples_at = iter(range(int(time.time()) - 600, int(time.time()), 30))  # 30 s apart

    def sample() -> None:  # the periodic job, as if it had run every 30 s in the last minutes
        with time_machine.travel(next(samples_at), tick=False):
            sample_health()

    with app.app_context():
        for card in ("pm_card_visa", "pm_card_visa", "pm_card_chargeDeclined", "pm_card_visa"):
            created = make_payment(make_order(make_customer()))
            created.payment_method = card
            db.session.commit()
            charge_payment(created.id)
            sample()
        breaker_for("stripe").force("open", actor="test", reason="provider incident")
        for _ in range(3):  # charges wait on the provider's queue while its breaker is open
            waiting = make_payment(make_order(make_customer()))
            db.session.commit()
            lifecycle.enqueue_send(CHARGE, "stripe", waiting.id, job_id=f"charge-{waiting.id}")
            sample()

    wait = WebDriverWait(browser, 15)
    browser.delete_all_cookies()
    browser.set_window_size(1200, 1600)
    browser.get(f"{live_server}/admin/")
    wait.until(ec.url_contains("/admin/login"))
    fill_admin_login(browser)
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "svg.chart")))
    charts = {
        c.find_element(By.TAG_NAME, "title").get_attribute("textContent"): c
        for c in browser.find_elements(By.CSS_SELECTOR, "svg.chart")
    }
    assert len(charts) == 4
    for title, chart in charts.items():
        assert chart.find_elements(By.TAG_NAME, "polyline"), f"{title}: nothing drawn"
        assert chart.size["width"] > 200  # drawn on the page, not collapsed
    payments = next(c for t, c in charts.items() if t.startswith("Payments per minute"))
    assert {"succeeded", "failed"} <= {t.text for t in payments.find_elements(By.TAG_NAME, "text")}
    browser.save_screenshot(str(artifacts / "admin-overview-charts.png"))
    browser.set_window_size(1200, 900)


def test_the_overview_updates_in_place_and_keeps_a_half_typed_reason(
    app: Flask, browser: Any, live_server: str, monkeypatch: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    import blueprints.admin.overview as overview

    monkeypatch.setattr(overview, "REFRESH_S", 1)
    make_admin(app)
    wait = WebDriverWait(browser, 15)
    browser.delete_all_cookies()
    browser.get(f"{live_server}/admin/login")
    fill_admin_login(browser)
    breaker = wait.until(
        ec.presence_of_element_located((By.CSS_SELECTOR, '.breaker[data-provider="stripe"]'))
    )
    reason = breaker.find_element(By.NAME, "reason")
    reason.send_keys("incident 12, the provider says")
    browser.execute_script("window.notReloaded = true;")
    with app.app_context():  # the numbers change under the page
        stuck = make_payment(make_order(make_customer()))
        stuck.status = PaymentStatus.UNKNOWN
        db.session.commit()
    wait.until(
        ec.text_to_be_present_in_element((By.CSS_SELECTOR, '[data-status="unknown"] .count'), "1")
    )
    assert browser.execute_script("return window.notReloaded") is True  # fetched, not reloaded
    kept = browser.find_element(By.CSS_SELECTOR, '.breaker[data-provider="stripe"] [name="reason"]')
    assert kept.get_attribute("value") == "incident 12, the provider says"


def test_a_refunder_walks_from_an_email_to_a_refund_and_its_csv(
    app: Flask, browser: Any, live_server: str, sandbox: Any
) -> None:
    """Issue 32's walk in Chromium: the search box -> the payment -> the customer's page
    -> the payment -> its refund page -> review -> refund -> the payments filtered by the
    email -> the CSV, which names the payment. (A viewer's refusal: tests/blueprints.)"""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    payment_id = charged_for(app, "walk@example.com")
    make_admin(app, "refunder", "refunder@example.com")
    wait = WebDriverWait(browser, 15)
    browser.delete_all_cookies()
    browser.set_window_size(1280, 900)
    browser.get(f"{live_server}/admin/login")
    fill_admin_login(browser, "refunder@example.com")
    search = wait.until(ec.presence_of_element_located((By.NAME, "q")))
    search.send_keys("walk@example.com")
    search.submit()
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h2"), f"Payment #{payment_id}"))
    browser.find_element(By.PARTIAL_LINK_TEXT, "Customer walk@example.com").click()
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "body"), "walk@example.com"))
    browser.find_element(By.PARTIAL_LINK_TEXT, f"#{payment_id}, ").click()
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h2"), f"Payment #{payment_id}"))
    browser.find_element(By.LINK_TEXT, "Refunds").click()
    browser.find_element(By.NAME, "reason").send_keys("the mug arrived broken")
    browser.find_element(By.ID, "review").click()
    wait.until(ec.element_to_be_clickable((By.ID, "refund"))).click()
    wait.until(lambda _: rows(app, Refund) == 1)
    browser.get(
        f"{live_server}/admin/admin_payments/?flt1_customer_email_equals=walk%40example.com"
    )
    wait.until(
        ec.presence_of_element_located((By.CSS_SELECTOR, f'a[href="/admin/payment/{payment_id}"]'))
    )
    exported = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/admin/admin_payments/export/csv/?flt1_customer_email_equals=walk%40example.com')"
        ".then(r => r.text()).then(done);"
    )
    assert [line.split(",")[0] for line in exported.splitlines()[1:]] == [str(payment_id)]
