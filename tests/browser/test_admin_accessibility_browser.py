"""Every dashboard page, at a desktop's 1280 px and a phone's 390 px: axe-core finds no
critical or serious violation, and nothing scrolls sideways (issue 32)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flask import Flask

from extensions import db
from models import Customer, OrderStatus, Payment
from models.types import utcnow
from services.refunds import requests as refund_requests
from services.statements import reconcile
from tests.admin_support import axe_violations, fill_admin_login, make_admin, page_overflow
from tests.factories import make_customer, make_dispute, make_order
from tests.helpers import charged, committed_payment, page_says, unknown_payment

WIDTHS = (1280, 390)


def _records(app: Flask) -> dict[str, int]:
    """A charged and disputed payment, and an unknown one, for the pages to show."""
    paid = charged(app, committed_payment(app))
    stuck = unknown_payment(app)
    with app.app_context():
        payment = db.session.get(Payment, paid)
        assert payment is not None
        make_dispute(payment, is_withdrawn=True)
        db.session.commit()
        asking = make_order(make_customer("asks@example.com"))
        asking.status, asking.paid_at = OrderStatus.PAID, utcnow()
        db.session.commit()
        customer = db.session.get(Customer, asking.customer_id)
        assert customer is not None and payment.order_id is not None
        refund_requests.ask(customer, asking.id, "The box came open and the mug was chipped.")
        reconcile.reconcile("stripe", utcnow().date())  # a day on the Books page (red)
        return {
            "paid": paid,
            "stuck": stuck,
            "customer": payment.customer_id,
            "order": payment.order_id,
        }


def test_admin_pages_are_accessible_and_fit_a_phone(
    app: Flask, browser: Any, live_server: str, sandbox: Any, axe_script: str, artifacts: Path
) -> None:

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    ids = _records(app)
    make_admin(app)
    pages = [
        "/admin/",
        "/admin/unknown/",
        "/admin/queues/",
        "/admin/admin_payments/",
        f"/admin/admin_payments/details/?id={ids['paid']}",
        "/admin/admin_orders/",
        f"/admin/admin_orders/details/?id={ids['order']}",
        "/admin/refund_requests/",
        f"/admin/admin_customers/details/?id={ids['customer']}",
        "/admin/admin_refunds/",
        "/admin/admin_disputes/",
        "/admin/admin_processed_webhooks/",
        "/admin/catalog/",
        "/admin/outbox/",
        f"/admin/payment/{ids['paid']}",
        f"/admin/refunds/payment/{ids['paid']}",
        "/admin/search/?q=nobody",
        "/admin/users/",
        "/admin/books/",
        f"/admin/books/stripe/{utcnow().date().isoformat()}",
        "/admin/books/trial-balance",
        "/admin/books/ledger?account=clearing:stripe",
        "/admin/books/payouts",
    ]
    browser.delete_all_cookies()
    browser.set_window_size(1280, 900)
    browser.get(f"{live_server}/admin/login")
    found: dict[str, Any] = {"login": axe_violations(browser, axe_script)}
    fill_admin_login(browser)
    for width in WIDTHS:
        browser.set_window_size(width, 900)
        for page in pages:
            browser.get(live_server + page)
            problems = axe_violations(browser, axe_script)
            overflow = page_overflow(browser)
            if problems or overflow > 0:
                found[f"{width} {page}"] = {
                    "overflow_px": overflow,
                    "violations": [(v["id"], v["nodes"][0]["target"]) for v in problems],
                }
        browser.get(f"{live_server}/admin/")
        browser.save_screenshot(str(artifacts / f"admin-overview-{width}.png"))
    # a page with a message (its close button): the admin saves their time zone
    browser.get(f"{live_server}/admin/users/")
    zone = browser.find_element(By.ID, "time-zone")
    zone.clear()
    zone.send_keys("Europe/Rome")
    browser.find_element(By.CSS_SELECTOR, "form.time-zone button").click()
    WebDriverWait(browser, 10).until(page_says(".alert", "times are shown in Europe/Rome"))
    found["with a message"] = [
        (v["id"], v["nodes"][0]["target"]) for v in axe_violations(browser, axe_script)
    ]
    found = {k: v for k, v in found.items() if v}
    (artifacts / "admin-axe.json").write_text(json.dumps(found, indent=1))
    assert found == {}
