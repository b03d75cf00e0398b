"""Roles, checked on the server: every role reads every page; a viewer's actions are
403s that move nothing; an operator works breakers and lookups but cannot refund; a
refunder refunds but cannot touch a breaker."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from models import Refund
from services.platform.provider_clients import breaker_for
from tests.helpers import (
    admin_csrf,
    admin_login,
    charged,
    committed_payment,
    make_admin,
    rows,
    unknown_payment,
)


def _as(app: Flask, client: FlaskClient, role: str) -> FlaskClient:
    email = f"{role}@example.com"
    make_admin(app, role, email)
    assert admin_login(client, email=email).status_code == 302
    return client


def _force_open(client: FlaskClient) -> int:
    return client.post(
        "/admin/breakers/stripe",
        data={
            "action": "open",
            "reason": "incident 9",
            "confirm": "yes",
            "csrf_token": admin_csrf(client, "/admin/"),
        },
    ).status_code


def _refund(client: FlaskClient, payment_id: int) -> int:
    """The refund page's typed form, then its review (two POSTs); the last status."""
    url = f"/admin/refunds/payment/{payment_id}"
    page = client.get(url).get_data(as_text=True)
    key = re.search(r'name="idempotency_key" value="([^"]+)"', page)
    form = {
        "csrf_token": admin_csrf(client, url),
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


@pytest.mark.parametrize("page", ["/admin/", "/admin/unknown/", "/admin/admin_payments/"])
def test_a_viewer_reads_every_page(app: Flask, client: FlaskClient, page: str) -> None:
    unknown_payment(app)
    assert _as(app, client, "viewer").get(page).status_code == 200


def test_a_viewers_actions_are_refused_and_move_nothing(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    payment_id = charged(app, committed_payment(app))
    viewer = _as(app, client, "viewer")
    assert _force_open(viewer) == 403
    with app.app_context():
        assert breaker_for("stripe").snapshot()["state"] == "closed"
    assert _refund(viewer, payment_id) == 403
    assert rows(app, Refund) == 0
    stuck = unknown_payment(app)
    resolved = viewer.post(
        f"/admin/unknown/{stuck}/resolve",
        data={"outcome": "failed", "reason": "not charged", "csrf_token": admin_csrf(viewer)},
    )
    assert resolved.status_code == 403


def test_an_operator_works_breakers_but_cannot_refund(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    payment_id = charged(app, committed_payment(app))
    operator = _as(app, client, "operator")
    assert _force_open(operator) in (302, 303)
    with app.app_context():
        assert breaker_for("stripe").snapshot()["state"] == "forced_open"
    assert _refund(operator, payment_id) == 403
    assert rows(app, Refund) == 0


def test_a_refunder_refunds_but_cannot_touch_a_breaker(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    payment_id = charged(app, committed_payment(app))
    refunder = _as(app, client, "refunder")
    assert _force_open(refunder) == 403
    assert _refund(refunder, payment_id) in (302, 303)
    assert rows(app, Refund) == 1
