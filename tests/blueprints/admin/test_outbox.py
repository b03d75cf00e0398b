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


def test_an_emails_subject_is_a_link_to_its_record(app: Flask, admin_client: FlaskClient) -> None:
    with app.app_context():
        customer = create_customer("linked@example.com", "password123", ["EUR"])
        customer_id = customer.id
    listing = admin_client.get("/admin/outbox/").get_data(as_text=True)
    assert f'href="/admin/admin_customers/details/?id={customer_id}">#{customer_id}</a>' in listing
    exported = admin_client.get("/admin/outbox/export/csv/").get_data(as_text=True)
    assert "<a" not in exported  # the CSV holds the bare id
