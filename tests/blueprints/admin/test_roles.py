"""Roles, checked on the server: every role reads every page; a viewer's actions are
403s that move nothing; an operator works breakers and lookups but cannot refund; a
refunder refunds but cannot touch a breaker."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from models import Refund
from services.platform.provider_clients import breaker_for
from tests.admin_support import admin_as, admin_csrf, admin_refund, force_open
from tests.helpers import charged, committed_payment, rows, unknown_payment


@pytest.mark.parametrize("page", ["/admin/", "/admin/unknown/", "/admin/admin_payments/"])
def test_a_viewer_reads_every_page(app: Flask, client: FlaskClient, page: str) -> None:
    unknown_payment(app)
    assert admin_as(app, client, "viewer").get(page).status_code == 200


def test_a_viewers_actions_are_refused_and_move_nothing(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    payment_id = charged(app, committed_payment(app))
    viewer = admin_as(app, client, "viewer")
    assert force_open(viewer) == 403
    with app.app_context():
        assert breaker_for("stripe").snapshot()["state"] == "closed"
    assert admin_refund(viewer, payment_id) == 403
    assert rows(app, Refund) == 0
    stuck = unknown_payment(app)
    resolved = viewer.post(
        f"/admin/unknown/{stuck}/resolve",
        data={
            "confirm": "yes",
            "outcome": "failed",
            "reason": "not charged",
            "csrf_token": admin_csrf(viewer),
        },
    )
    assert resolved.status_code == 403


def test_an_operator_works_breakers_but_cannotadmin_refund(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    payment_id = charged(app, committed_payment(app))
    operator = admin_as(app, client, "operator")
    assert force_open(operator) in (302, 303)
    with app.app_context():
        assert breaker_for("stripe").snapshot()["state"] == "forced_open"
    assert admin_refund(operator, payment_id) == 403
    assert rows(app, Refund) == 0


def test_a_refunder_refunds_but_cannot_touch_a_breaker(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    payment_id = charged(app, committed_payment(app))
    refunder = admin_as(app, client, "refunder")
    assert force_open(refunder) == 403
    assert admin_refund(refunder, payment_id) in (302, 303)
    assert rows(app, Refund) == 1


def test_a_refusal_is_a_dashboard_page_that_names_the_roles(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    payment_id = charged(app, committed_payment(app))
    viewer = admin_as(app, client, "viewer")
    page = viewer.get(f"/admin/refunds/payment/{payment_id}").get_data(as_text=True)
    assert 'class="card card-body refund-form"' not in page  # no form the role cannot send
    assert "needs the refunder or admin role" in page
    refused = viewer.post(
        f"/admin/refunds/payment/{payment_id}",
        data={"csrf_token": admin_csrf(viewer), "reason": "broken mug", "amount": ""},
    )
    text = refused.get_data(as_text=True)
    assert refused.status_code == 403
    assert "dashboard-search" in text and "Back to the catalog" not in text
    assert "refunder or admin" in text and "viewer" in text
    assert rows(app, Refund) == 0
