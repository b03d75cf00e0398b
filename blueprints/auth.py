"""Customer sign-up, login and logout (server-rendered)."""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import (
    Blueprint,
    current_app,
    flash,
    redirect,
    render_template,
    request,
    url_for,
)
from flask.typing import ResponseReturnValue
from flask_login import login_user, logout_user

from services.customers import AccountError, authenticate, create_customer

bp = Blueprint("auth", __name__)


def _safe_next(target: str | None) -> str:
    # Only same-site relative paths: an open redirect would help phishing.
    if (
        target
        and target.startswith("/")
        and not target.startswith("//")
        and not urlsplit(target).netloc
    ):
        return target
    return url_for("shop.catalog")


@bp.route("/login", methods=["GET", "POST"])
def login() -> ResponseReturnValue:
    if request.method == "POST":
        customer = authenticate(request.form.get("email", ""), request.form.get("password", ""))
        if customer is None:
            flash("Email or password is wrong.", "error")
            return render_template("auth/login.html"), 400
        login_user(customer)
        return redirect(_safe_next(request.args.get("next")))
    return render_template("auth/login.html")


@bp.route("/signup", methods=["GET", "POST"])
def signup() -> ResponseReturnValue:
    if request.method == "POST":
        try:
            customer = create_customer(
                request.form.get("email", ""),
                request.form.get("password", ""),
                current_app.config["CURRENCIES"],
            )
        except AccountError as exc:
            flash(str(exc), "error")
            return render_template("auth/signup.html"), 400
        login_user(customer)
        return redirect(url_for("shop.catalog"))
    return render_template("auth/signup.html")


@bp.post("/logout")
def logout() -> ResponseReturnValue:
    logout_user()
    return redirect(url_for("shop.catalog"))
