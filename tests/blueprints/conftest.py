"""Fixtures of the page tests."""

from __future__ import annotations

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.helpers import seed_catalog
from tests.shop_support import login


@pytest.fixture
def shopper(app: Flask, client: FlaskClient) -> FlaskClient:
    """A logged-in customer, with the catalog seeded."""
    with app.app_context():
        seed_catalog()
    login(client, app)
    return client
