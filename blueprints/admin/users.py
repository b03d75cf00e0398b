"""Dashboard users and their roles: every admin reads the list; only an admin gives a
role (with a reason, logged with who and why)."""

from __future__ import annotations

from flask import flash, redirect, request, url_for
from flask.typing import ResponseReturnValue
from flask_admin import BaseView, expose

from blueprints.admin.base import AdminOnly
from models import AdminRole
from services.backoffice import admins
from services.platform.errors import ClientError


class UsersView(AdminOnly, BaseView):
    requires = {"role": admins.USERS}

    @expose("/")
    def index(self) -> ResponseReturnValue:
        return self.render(
            "dashboard/users.html",
            users=admins.all_admins(),
            roles=list(AdminRole),
            can_manage=admins.can(admins.current_admin(), admins.USERS),
            admin_user=admins.current_admin(),
            zones=admins.common_zones(),
        )

    @expose("/time-zone", methods=["POST"])
    def time_zone(self) -> ResponseReturnValue:
        """Every dashboard user chooses the zone they read times in."""
        admin = admins.current_admin()
        assert admin is not None
        try:
            flash(admins.set_time_zone(admin, request.form.get("time_zone", "")), "success")
        except ClientError as exc:
            flash(str(exc), "error")
        return redirect(url_for("users.index"), code=303)

    @expose("/<id:admin_id>/role", methods=["POST"])
    def role(self, admin_id: int) -> ResponseReturnValue:
        actor = admins.current_admin()
        assert actor is not None
        try:
            flash(
                admins.set_role(
                    admin_id, request.form.get("role", ""), request.form.get("reason", ""), actor
                ),
                "success",
            )
        except ClientError as exc:
            flash(str(exc), "error")
        return redirect(url_for("users.index"), code=303)
