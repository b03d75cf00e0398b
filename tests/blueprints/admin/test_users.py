"""Dashboard users and roles: an admin gives a role with a reason, and it takes effect on
the next action; no one else may; the last admin keeps the role."""

from __future__ import annotations

import re

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import AdminRole, AdminUser
from tests.admin_support import admin_as, admin_csrf, admin_login, force_open, make_admin


def _id(app: Flask, email: str) -> int:
    with app.app_context():
        found = db.session.scalar(select(AdminUser.id).where(AdminUser.email == email))
        assert found is not None
        return found


def _set(client: FlaskClient, admin_id: int, role: str, reason: str = "moved to on-call") -> str:
    response = client.post(
        f"/admin/users/{admin_id}/role",
        data={"role": role, "reason": reason, "csrf_token": admin_csrf(client, "/admin/users/")},
        follow_redirects=True,
    )
    return response.get_data(as_text=True)


def test_an_admin_gives_a_role_and_it_takes_effect(app: Flask, client: FlaskClient) -> None:
    make_admin(app, "viewer", "dana@example.com")
    boss = admin_as(app, client, "admin")
    page = boss.get("/admin/users/").get_data(as_text=True)
    assert re.search(
        r'data-user="dana@example.com"><td>dana@example.com</td><td class="role">viewer', page
    )
    said = _set(boss, _id(app, "dana@example.com"), "operator")
    assert "dana@example.com is operator (was viewer)" in said
    assert "no role" in _set(boss, _id(app, "dana@example.com"), "root")
    assert "give the reason" in _set(boss, _id(app, "dana@example.com"), "viewer", reason="")
    dana = app.test_client()
    admin_login(dana, email="dana@example.com")
    assert force_open(dana) in (302, 303)  # an operator now


def test_only_an_admin_gives_roles_and_the_last_admin_stays(
    app: Flask, client: FlaskClient
) -> None:
    make_admin(app, "admin", "only-admin@example.com")
    operator = admin_as(app, client, "operator")
    refused = operator.post(
        f"/admin/users/{_id(app, 'only-admin@example.com')}/role",
        data={"role": "viewer", "reason": "a coup", "csrf_token": admin_csrf(operator, "/admin/")},
    )
    assert refused.status_code == 403
    boss = admin_as(app, app.test_client(), "admin")
    # Two admins: one may step down; then the other is the last and stays.
    assert "is viewer" in _set(boss, _id(app, "only-admin@example.com"), "viewer")
    assert "the last admin keeps" in _set(boss, _id(app, "admin@example.com"), "viewer")
    with app.app_context():
        roles = dict(db.session.execute(select(AdminUser.email, AdminUser.role)).all())
    assert roles["admin@example.com"] == AdminRole.ADMIN
