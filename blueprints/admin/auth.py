"""The dashboard's login and logout (the one part of /admin open without a session)."""

from __future__ import annotations

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from blueprints.auth import TOO_MANY_ATTEMPTS, safe_next
from services.backoffice import admins

bp = Blueprint("admin_auth", __name__, url_prefix="/admin")


@bp.route("/login", methods=["GET", "POST"])
def login() -> ResponseReturnValue:
    if request.method == "POST":
        try:
            admin = admins.authenticate(
                request.form.get("email", ""),
                request.form.get("password", ""),
                request.remote_addr or "unknown",
            )
        except admins.TooManyAttemptsError:
            flash(TOO_MANY_ATTEMPTS, "error")
            return render_template("dashboard/login.html"), 429
        if admin is None:
            flash("Email or password is wrong.", "error")
            return render_template("dashboard/login.html"), 400
        admins.log_in(admin)
        return redirect(safe_next(request.args.get("next"), url_for("admin.index"), "/admin"))
    return render_template("dashboard/login.html")


@bp.post("/logout")
def logout() -> ResponseReturnValue:
    admins.log_out()
    return redirect(url_for("admin_auth.login"))
