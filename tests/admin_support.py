"""Helpers of the admin dashboard's tests: dashboard users and their sign-in (test client
and Chromium), the actions they take, and axe-core's findings on a page."""

from __future__ import annotations

import re
import uuid
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from werkzeug.security import generate_password_hash

from extensions import db
from models import AdminUser
from tests.helpers import csrf_token_from

ADMIN_EMAIL = "ops@example.com"
ADMIN_PASSWORD = "correct horse battery"


def make_admin(app: Flask, role: str = "admin", email: str = ADMIN_EMAIL) -> None:
    with app.app_context():
        db.session.add(
            AdminUser(email=email, password_hash=generate_password_hash(ADMIN_PASSWORD), role=role)
        )
        db.session.commit()


def admin_login(
    client: FlaskClient, password: str = ADMIN_PASSWORD, email: str = ADMIN_EMAIL
) -> Any:
    token = csrf_token_from(client.get("/admin/login").get_data(as_text=True))
    return client.post(
        "/admin/login", data={"email": email, "password": password, "csrf_token": token}
    )


def admin_csrf(client: FlaskClient, url: str = "/admin/") -> str:
    """The CSRF token of an admin page's forms (the overview's sign-out form has it for
    every role: the session's one token)."""
    return csrf_token_from(client.get(url).get_data(as_text=True))


def admin_as(app: Flask, client: FlaskClient, role: str) -> FlaskClient:
    """The client, signed in as a new dashboard user with `role`."""
    email = f"{role}@example.com"
    make_admin(app, role, email)
    assert admin_login(client, email=email).status_code == 302
    return client


def force_open(client: FlaskClient, reason: str = "incident 9") -> int:
    """Force the stripe breaker open from the overview (confirmed, with a reason)."""
    return client.post(
        "/admin/breakers/stripe",
        data={
            "action": "open",
            "reason": reason,
            "confirm": "yes",
            "csrf_token": admin_csrf(client, "/admin/"),
        },
    ).status_code


def admin_refund(client: FlaskClient, payment_id: int) -> int:
    """The refund page's typed form, then its review (two POSTs); the last status."""
    url = f"/admin/refunds/payment/{payment_id}"
    page = client.get(url).get_data(as_text=True)
    key = re.search(r'name="idempotency_key" value="([^"]+)"', page)
    form = {
        "csrf_token": admin_csrf(client),
        "idempotency_key": key.group(1) if key else str(uuid.uuid4()),
        "reason": "the mug arrived broken",
        "amount": "",
    }
    first = client.post(url, data=form)
    if first.status_code != 200:
        return first.status_code
    review = first.get_data(as_text=True)
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', review))
    return client.post(url, data={**fields, "confirm": "yes"}).status_code


def axe_violations(browser: Any, axe_script: str) -> list[dict[str, Any]]:
    """axe-core's critical and serious violations on the browser's page."""
    browser.execute_script(axe_script)
    result = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then(done);"
    )
    return [v for v in result["violations"] if v["impact"] in ("critical", "serious")]


def page_overflow(browser: Any) -> int:
    """How far the page scrolls sideways (0: it fits the window)."""
    return int(
        browser.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
    )


def fill_admin_login(browser: Any, email: str = ADMIN_EMAIL) -> None:
    """Sign in on the dashboard's login page the browser shows."""
    from selenium.webdriver.common.by import By

    browser.find_element(By.NAME, "email").send_keys(email)
    browser.find_element(By.NAME, "password").send_keys(ADMIN_PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
