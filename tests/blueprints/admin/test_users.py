"""Dashboard users and roles: an admin gives a role with a reason, and it takes effect on
the next action; no one else may; the last admin keeps the role."""

from __future__ import annotations

import re
import threading

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, update

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


def test_two_admins_demoting_each_other_at_once_leave_one_admin(app: Flask) -> None:
    """Real threads, each its own connection, started together on a barrier, ten rounds:
    one demotion goes through and the other is refused as the last admin's."""
    make_admin(app, "admin", "ann@example.com")
    make_admin(app, "admin", "ben@example.com")
    ann, ben = _id(app, "ann@example.com"), _id(app, "ben@example.com")
    for _ in range(10):
        barrier, said = threading.Barrier(2), list[str]()
        threads = [
            threading.Thread(target=_demote, args=(app, barrier, said, ben, ann)),
            threading.Thread(target=_demote, args=(app, barrier, said, ann, ben)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert sorted(said) == ["demoted", "last_admin"]
        with app.app_context():
            left = db.session.scalars(
                select(AdminUser.email).where(AdminUser.role == AdminRole.ADMIN)
            ).all()
            assert len(left) == 1
            db.session.execute(
                update(AdminUser).where(AdminUser.id.in_([ann, ben])).values(role=AdminRole.ADMIN)
            )
            db.session.commit()


def _demote(
    app: Flask, barrier: threading.Barrier, said: list[str], target: int, actor: int
) -> None:
    from services.backoffice import admins
    from services.platform.errors import ClientError

    with app.app_context():
        me = db.session.get(AdminUser, actor)
        assert me is not None
        barrier.wait()
        try:
            admins.set_role(target, "viewer", "step down now", me)
            said.append("demoted")
        except ClientError as exc:
            said.append(exc.code)
        finally:
            db.session.remove()
