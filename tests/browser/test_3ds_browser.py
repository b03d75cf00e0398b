"""3-D Secure in a real browser: the customer types a card into the (sandbox's) Stripe.js,
pays, confirms with the bank on the bank's page, and comes back to the shop."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import func, select

from devtools.servers import free_port
from extensions import db
from models import Payment, PaymentStatus
from services.accounts.customers import create_customer
from services.payments.authentication import sweep_abandoned
from tests.browser.support import to_checkout, type_card
from tests.helpers import all_rows, page_says, run_jobs, seed_catalog, serving

THREE_DS = "4000 0025 0000 3155"
BUYER = "buyer@example.com"

Shop = tuple[Flask, str]


@pytest.fixture
def shop(app: Flask, make_app: Any) -> Iterator[Callable[..., Shop]]:
    """The app on a live server whose PUBLIC_URL is its own address (the bank sends the
    customer back there); settings overridable per test."""
    servers: list[Any] = []

    def start(**overrides: Any) -> Shop:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        live = make_app(PUBLIC_URL=url, **overrides)
        server = serving(live, port)
        servers.append(server)
        server.__enter__()
        with live.app_context():
            seed_catalog()
            create_customer(BUYER, "password123", live.config["CURRENCIES"])
        return live, url

    yield start
    for server in servers:
        server.__exit__(None, None, None)


def _pay(browser: Any, number: str, *, double: bool = False) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    type_card(browser, number)
    button = browser.find_element(By.ID, "pay")
    if double:
        ActionChains(browser).double_click(button).perform()
    else:
        button.click()
    WebDriverWait(browser, 15).until(ec.url_matches(r"/payments/\d+$"))


def _heading(browser: Any, live: Flask, text: str) -> None:
    """Run the provider queue until the (self-refreshing) status page shows `text`."""
    from selenium.webdriver.support.ui import WebDriverWait

    run_jobs(live)
    WebDriverWait(browser, 15).until(page_says("h2", text))


def _bank(browser: Any, button: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    confirm = browser.find_element(By.ID, "confirm-with-bank")
    drawn = confirm.value_of_css_property("background-color")
    assert confirm.get_attribute("role") == "button" and drawn != "rgba(0, 0, 0, 0)", drawn
    confirm.click()
    WebDriverWait(browser, 15).until(ec.title_contains("3D Secure"))
    browser.find_element(By.ID, button).click()
    WebDriverWait(browser, 15).until(ec.url_matches(r"/payments/\d+\?back=bank$"))
    # Back from the bank, the page never asks to confirm again while it checks.
    assert "Confirm with your bank" not in browser.find_element(By.TAG_NAME, "h2").text


def _payments(live: Flask) -> list[Payment]:
    return all_rows(live, Payment)


def test_a_plain_card_pays(browser: Any, shop: Any, sandbox: Any) -> None:
    live, url = shop()
    to_checkout(browser, url, BUYER)
    _pay(browser, "4242 4242 4242 4242")
    _heading(browser, live, "payment succeeded")
    [paid] = _payments(live)
    assert paid.status == PaymentStatus.SUCCEEDED and paid.payment_method.startswith("pm_")  # type: ignore[union-attr]  # a card payment has a method


def test_completing_the_banks_challenge_pays(
    browser: Any, shop: Any, sandbox: Any, artifacts: Path
) -> None:
    live, url = shop()
    to_checkout(browser, url, BUYER)
    _pay(browser, THREE_DS)
    _heading(browser, live, "Confirm with your bank")
    browser.save_screenshot(str(artifacts / "3ds-confirm-with-bank.png"))
    _bank(browser, "complete-authentication")
    _heading(browser, live, "payment succeeded")
    [paid] = _payments(live)
    assert paid.status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(paid.id)) == 1


def test_a_failed_challenge_fails_and_paying_again_works(
    browser: Any, shop: Any, sandbox: Any
) -> None:
    from selenium.webdriver.common.by import By

    live, url = shop()
    to_checkout(browser, url, BUYER)
    _pay(browser, THREE_DS)
    _heading(browser, live, "Confirm with your bank")
    _bank(browser, "fail-authentication")
    _heading(browser, live, "Your payment failed")
    browser.find_element(By.LINK_TEXT, "Try again").click()
    _pay(browser, "4242 4242 4242 4242")
    _heading(browser, live, "payment succeeded")
    failed, paid = _payments(live)
    assert failed.status == PaymentStatus.FAILED and paid.status == PaymentStatus.SUCCEEDED
    assert failed.idempotency_key != paid.idempotency_key  # a new page, a new payment
    assert sandbox.succeeded_charges(str(paid.id)) == 1


def test_double_clicking_pay_with_a_3ds_card_makes_one_intent(
    browser: Any, shop: Any, sandbox: Any
) -> None:
    live, url = shop()
    to_checkout(browser, url, BUYER)
    _pay(browser, THREE_DS, double=True)
    _heading(browser, live, "Confirm with your bank")
    assert len(_payments(live)) == 1
    assert len(sandbox.requests_log(endpoint="create")) == 1  # one PaymentIntent


def test_an_abandoned_challenge_is_cancelled_after_the_timeout(
    browser: Any, shop: Any, sandbox: Any
) -> None:
    live, url = shop(SCA_TIMEOUT_S=0)  # the customer's time is up as soon as it starts
    to_checkout(browser, url, BUYER)
    _pay(browser, THREE_DS)
    _heading(browser, live, "Confirm with your bank")  # ...and the customer walks away
    with live.app_context():
        assert sweep_abandoned() == 1
    _heading(browser, live, "Your payment failed")
    [cancelled] = _payments(live)
    assert cancelled.decline_code == "authentication_abandoned"
    with live.app_context():
        assert db.session.scalar(select(func.count()).select_from(Payment)) == 1
    assert sandbox.succeeded_charges(str(cancelled.id)) == 0
