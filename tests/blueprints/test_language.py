"""The customer's language: Accept-Language by default, the switcher's choice after it
(remembered for their emails too), a lang attribute on every page, and no open redirect."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import Customer
from services.catalog.demo_data import seed_catalog
from tests.helpers import csrf_token_from

ITALIAN = {"Accept-Language": "it-IT,it;q=0.9,en;q=0.4"}


def switch(client: FlaskClient, code: str, next: str = "/") -> Any:
    """The switcher as a browser uses it: the form's POST with its CSRF token."""
    token = csrf_token_from(client.get("/cart").get_data(as_text=True))
    return client.post("/language", data={"code": code, "next": next, "csrf_token": token})


def test_the_browser_language_chooses_the_page_language(app: Flask, client: FlaskClient) -> None:
    with app.app_context():
        seed_catalog()
    italian = client.get("/", headers=ITALIAN).get_data(as_text=True)
    assert '<html lang="it">' in italian and "Aggiungi al carrello" in italian
    assert "14,00\xa0€" in italian  # the mug, as Italians write it
    english = client.get("/", headers={"Accept-Language": "de, en;q=0.5"}).get_data(as_text=True)
    assert '<html lang="en">' in english and "Add to cart" in english and "€14.00" in english
    assert '<html lang="en">' in client.get("/").get_data(as_text=True)  # no header: English


def test_the_switcher_wins_over_the_browser_and_follows_the_customer(
    app: Flask, shopper: FlaskClient
) -> None:
    switched = switch(shopper, "it", "/orders")
    assert switched.status_code == 302 and switched.headers["Location"] == "/orders"
    page = shopper.get("/orders", headers={"Accept-Language": "en"}).get_data(as_text=True)
    assert '<html lang="it">' in page and "I tuoi ordini" in page
    assert 'name="code" value="en"' in page  # and back
    with app.app_context():
        customer = db.session.scalar(
            select(Customer).where(Customer.email == "shopper@example.com")
        )
        assert customer is not None and customer.locale == "it"  # their emails follow
    switch(shopper, "en")
    assert "Your orders" in shopper.get("/orders").get_data(as_text=True)


@pytest.mark.parametrize(
    "target", ["https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:x"]
)
def test_the_switcher_never_sends_anyone_elsewhere(client: FlaskClient, target: str) -> None:
    response = switch(client, "it", target)
    assert response.status_code == 302 and response.headers["Location"] == "/"


def test_an_unknown_language_changes_nothing(client: FlaskClient) -> None:
    response = switch(client, "xx", "/cart")
    assert response.status_code == 302 and "lang=" not in response.headers.get("Set-Cookie", "")
    assert '<html lang="en">' in client.get("/cart").get_data(as_text=True)


def test_another_site_cannot_change_a_customers_language(app: Flask, shopper: FlaskClient) -> None:
    """Without the form's token (a cross-site form, an image's GET) nothing is stored."""
    refused = shopper.post("/language", data={"code": "it", "next": "/"})
    assert refused.status_code == 400
    assert shopper.get("/language/it").status_code in (404, 405)
    with app.app_context():
        customer = db.session.scalar(
            select(Customer).where(Customer.email == "shopper@example.com")
        )
        assert customer is not None and customer.locale != "it"
    assert '<html lang="en">' in shopper.get("/cart").get_data(as_text=True)
