"""Enqueueing: deterministic job ids, so a second click or sweep adds nothing."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient

from tests.admin_support import admin_csrf
from tests.helpers import queued_job_ids, unknown_payment


def test_reconcile_now_enqueues_one_job_when_clicked_twice(
    admin_client: FlaskClient, app: Flask
) -> None:
    payment_id = unknown_payment(app)
    for _ in range(2):
        admin_client.post(
            f"/admin/unknown/{payment_id}/reconcile", data={"csrf_token": admin_csrf(admin_client)}
        )
    assert queued_job_ids(app) == [f"reconcile-{payment_id}-0-now"]
