"""Security headers on every page, and a chunked webhook body over the limit is refused."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient

from extensions import db
from models import ProcessedWebhook
from tests.admin_support import admin_login, make_admin
from tests.helpers import serving


@pytest.mark.parametrize("path", ["/", "/login", "/admin/login", "/api/orders/1", "/nowhere"])
def test_every_answer_carries_the_security_headers(client: FlaskClient, path: str) -> None:
    response = client.get(path)
    csp = response.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp and "object-src 'none'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert re.search(r"script-src 'self' 'nonce-[\w-]{16,}'", csp)
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "strict-origin-when-cross-origin"


def test_admin_scripts_carry_this_requests_nonce(app: Flask, client: FlaskClient) -> None:
    make_admin(app)
    admin_login(client)
    response = client.get("/admin/admin_payments/")
    nonce = re.search(r"'nonce-([\w-]+)'", response.headers["Content-Security-Policy"])
    assert nonce is not None
    scripts = re.findall(r"<script[^>]*>", response.get_data(as_text=True))
    assert scripts and all(f'nonce="{nonce.group(1)}"' in tag for tag in scripts)
    assert "<script>" not in response.get_data(as_text=True)


@pytest.fixture
def served(make_app: Any, app: Flask) -> Iterator[str]:
    """The app behind a real HTTP server (chunked bodies need one)."""
    with serving(make_app(WEBHOOK_MAX_BODY_BYTES=1000, MAX_CONTENT_LENGTH=None)) as url:
        yield url


def test_a_chunked_webhook_body_over_the_limit_is_refused(app: Flask, served: str) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(200):  # 200 KB, no Content-Length
            yield b"x" * 1024

    response = requests.post(
        f"{served}/webhooks/stripe",
        data=chunks(),
        headers={"Content-Type": "application/json", "Stripe-Signature": "t=1,v1=00"},
        timeout=10,
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "body_too_large"
    small = requests.post(
        f"{served}/webhooks/stripe",
        data=iter([b"{}"]),
        headers={"Content-Type": "application/json", "Stripe-Signature": "t=1,v1=00"},
        timeout=10,
    )
    assert small.status_code == 400  # read whole, then refused for its signature
    with app.app_context():
        assert db.session.query(ProcessedWebhook).count() == 0


def test_the_card_entry_origins_and_nothing_else(app: Flask, client: FlaskClient) -> None:
    csp = client.get("/").headers["Content-Security-Policy"]
    card_origin = app.config["STRIPE_JS_URL"].rsplit("/js/", 1)[0]  # the sandbox in tests
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["script-src"].split()[-1] == card_origin
    assert directives["frame-src"] == f"'self' {card_origin}"
    assert directives["connect-src"] == f"'self' {app.config['STRIPE_API_BASE']}"
    assert csp.count("http") == 3  # the card entry's three: no other origin anywhere


def test_without_stripe_js_no_outside_origin_is_allowed(make_app: Any) -> None:
    acquirer_only = make_app(PAYMENTS_DEFAULT_PROVIDER="acquirer")
    csp = acquirer_only.test_client().get("/").headers["Content-Security-Policy"]
    assert "http" not in csp
