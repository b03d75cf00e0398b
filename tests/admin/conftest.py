from __future__ import annotations

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.helpers import admin_login, make_admin


@pytest.fixture
def admin_client(app: Flask, client: FlaskClient) -> FlaskClient:
    make_admin(app)
    response = admin_login(client)
    assert response.status_code == 302
    return client
