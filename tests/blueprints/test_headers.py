"""Security headers on every page, and a chunked webhook body over the limit is refused."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from flask import Flask, Response
from flask.testing import FlaskClient

from config import PROJECT_DIR
from extensions import db
from models import ProcessedWebhook
from tests.admin_support import admin_login, make_admin
from tests.config_support import PRODUCTION
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


def test_a_views_own_header_stands_and_the_rest_are_added(make_app: Any) -> None:
    own = make_app()

    @own.get("/framed")
    def framed() -> Response:
        response = Response("ok")
        response.headers["x-frame-options"] = "SAMEORIGIN"  # its own, in any case
        response.headers["Content-Security-Policy"] = "default-src 'none'"
        return response

    response = own.test_client().get("/framed")
    assert response.headers.getlist("X-Frame-Options") == ["SAMEORIGIN"]
    assert response.headers.getlist("Content-Security-Policy") == ["default-src 'none'"]
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert "Strict-Transport-Security" not in response.headers  # not in development


def test_production_answers_carry_hsts() -> None:
    env = {**os.environ, **PRODUCTION}
    probe = (
        "import wsgi; r = wsgi.app.test_client().get('/static/style.css'); "
        "print(r.headers.get('Strict-Transport-Security'), r.headers.get('X-Frame-Options'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["max-age=31536000;", "includeSubDomains", "DENY"]


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


def test_without_stripe_no_frame_is_allowed(make_app: Any) -> None:
    braintree_only = make_app(
        PAYMENTS_PROVIDERS=["braintree"],
        PAYMENTS_DEFAULT_PROVIDER="braintree",
        PAYMENTS_PROVIDER_WEIGHTS={"braintree": 1},
    )
    csp = braintree_only.test_client().get("/").headers["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert "http" not in directives["frame-src"]  # braintree-web's stand-in frames nothing
    assert csp.count("http") == 2  # its script, and the client API it sends the card to
