"""Customer sign-up, login and logout (server-rendered)."""

from __future__ import annotations

import re

from flask import (
    Blueprint,
    flash,
    redirect,
    render_template,
    request,
    url_for,
)
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_login import current_user, login_required, login_user, logout_user

from services.accounts.customers import (
    AccountError,
    TooManyAttemptsError,
    authenticate,
    end_sessions,
    remember_locale,
    sign_up,
)
from services.accounts.login_throttle import count_signup
from services.platform.locales import current_locale
from settings import settings

bp = Blueprint("auth", __name__)


# A same-site path: one slash, then URL characters only (no backslash, which browsers
# read as a slash, no control characters, which would split the Location header).
SAFE_PATH_RE = re.compile(r"/(?![/\\])[A-Za-z0-9\-._~/%?=&+:@!$'()*,;]*")
TOO_MANY_ATTEMPTS = "Too many attempts. Wait 15 minutes and try again."


def safe_next(target: str | None, default: str, prefix: str = "/") -> str:
    """`target` if it is a path on this site under `prefix`, else `default`: an open
    redirect would help phishing."""
    if target and target.startswith(prefix) and SAFE_PATH_RE.fullmatch(target[:2000]):
        return target
    return default


@bp.route("/login", methods=["GET", "POST"])
def login() -> ResponseReturnValue:
    if request.method == "POST":
        try:
            customer = authenticate(
                request.form.get("email", ""),
                request.form.get("password", ""),
                request.remote_addr or "unknown",
            )
        except TooManyAttemptsError:
            flash(TOO_MANY_ATTEMPTS, "error")
            return render_template("auth/login.html"), 429
        if customer is None:
            flash(_("Email or password is wrong."), "error")
            return render_template("auth/login.html"), 400
        login_user(customer)
        remember_locale(customer, current_locale())
        return redirect(safe_next(request.args.get("next"), url_for("shop.catalog")))
    return render_template("auth/login.html")


@bp.route("/signup", methods=["GET", "POST"])
def signup() -> ResponseReturnValue:
    if request.method == "POST":
        try:
            count_signup(request.remote_addr or "unknown")
        except TooManyAttemptsError:
            flash(TOO_MANY_ATTEMPTS, "error")
            return render_template("auth/signup.html"), 429
        email, password = request.form.get("email", ""), request.form.get("password", "")
        try:
            customer = sign_up(email, password, settings().money.currencies, current_locale())
            # An email that had an account: its owner (the same password) is signed in.
            customer = customer or authenticate(email, password, request.remote_addr or "unknown")
        except AccountError as exc:
            flash(_(exc.template, **exc.params), "error")
            return render_template("auth/signup.html"), 400
        except TooManyAttemptsError:
            customer = None
        if customer is not None:
            login_user(customer)
            flash(_("Welcome! Your account is ready and you are signed in."), "ok")
            return redirect(url_for("shop.catalog"), code=303)
        # Someone else's email, or a wrong password for one's own: nothing changed.
        flash(_("Your account is ready: log in with your email and password."), "ok")
        return redirect(url_for("auth.login"), code=303)
    return render_template("auth/signup.html")


@bp.post("/logout")
@login_required
def logout() -> ResponseReturnValue:
    end_sessions(current_user)  # a copy of this session's cookie stops working too
    logout_user()
    return redirect(url_for("shop.catalog"))
