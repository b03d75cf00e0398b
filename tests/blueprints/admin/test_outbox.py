"""The dashboard's outbox: every email with its status; an admin opens one."""

from __future__ import annotations

import re

from flask import Flask
from flask.testing import FlaskClient

from services.accounts.customers import create_customer


def test_the_outbox_lists_and_opens_messages(app: Flask, admin_client: FlaskClient) -> None:
    with app.app_context():
        create_customer("listed@example.com", "password123", ["EUR"])
    listing = admin_client.get("/admin/outbox/").get_data(as_text=True)
    assert "listed@example.com" in listing and "pending" in listing
    link = re.search(r'href="(/admin/outbox/message/\d+)"', listing)
    assert link
    message = admin_client.get(link.group(1)).get_data(as_text=True)
    assert "Welcome to Payments Monolith" in message and "Message-ID" in message
    assert admin_client.get("/admin/outbox/message/999999").status_code == 404
