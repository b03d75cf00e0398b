"""Fixtures of the page tests."""

from __future__ import annotations

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.blueprints.test_checkout import login
from tests.helpers import seed_catalog


@pytest.fixture
def shopper(app: Flask, client: FlaskClient) -> FlaskClient:
    """A logged-in customer, with the catalog seeded."""
    with app.app_context():
        seed_catalog()
    login(client, app)
    return client
