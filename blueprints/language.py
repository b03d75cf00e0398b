"""The language switcher, and how each request's language is chosen: the customer's
choice (a cookie the switcher sets), else the browser's Accept-Language, else English."""

from __future__ import annotations

from flask import Blueprint, has_request_context, redirect, request, url_for
from flask_login import current_user
from werkzeug.wrappers import Response

from blueprints.auth import safe_next
from services.accounts.customers import remember_locale
from services.platform.locales import SUPPORTED_LOCALES

bp = Blueprint("language", __name__)
COOKIE = "lang"
COOKIE_MAX_AGE_S = 365 * 24 * 3600  # a preference, kept for a year


def select_locale() -> str | None:
    """Flask-Babel's locale selector (None outside a request: the default, English; an
    email forces its recipient's)."""
    if not has_request_context():
        return None
    chosen = request.cookies.get(COOKIE)
    if chosen in SUPPORTED_LOCALES:
        return chosen
    return request.accept_languages.best_match(SUPPORTED_LOCALES) or SUPPORTED_LOCALES[0]


@bp.post("/language")
def switch() -> Response:
    """Remember the language and go back where the customer was (a path of ours only).
    A POST with the form's CSRF token: it changes the account's stored language, which
    no other site may do for a visitor (a GET could be an image on any page)."""
    code = request.form.get("code", "")
    response = redirect(safe_next(request.form.get("next"), url_for("shop.catalog")))
    if code in SUPPORTED_LOCALES and current_user.is_authenticated:
        remember_locale(current_user, code)  # their emails follow
    if code in SUPPORTED_LOCALES:
        response.set_cookie(
            COOKIE,
            code,
            max_age=COOKIE_MAX_AGE_S,
            samesite="Lax",
            httponly=True,
            secure=request.is_secure,
        )
    return response
