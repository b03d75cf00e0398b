"""Admin sign-in: its own session key (never a customer's), hashed passwords, rate limits."""

from __future__ import annotations

from flask import session
from sqlalchemy import select
from werkzeug.security import check_password_hash, generate_password_hash

from extensions import db
from models import AdminUser
from models.types import utcnow
from services import login_throttle
from services.login_throttle import TooManyAttemptsError

SESSION_KEY = "admin_user_id"
SESSION_VERSION_KEY = "admin_session_version"
# Checked when the email is unknown, so that answer takes as long as a wrong password.
_DUMMY_HASH = generate_password_hash("not-a-password-of-anyone")

__all__ = ["TooManyAttemptsError", "authenticate", "current_admin", "log_in", "log_out"]


def authenticate(email: str, password: str, address: str) -> AdminUser | None:
    """The admin whose credentials match, or None. Raises TooManyAttemptsError
    (services/login_throttle.py: failures per account and address, never successes)."""
    login_throttle.check("admin", email, address)
    admin = db.session.scalar(select(AdminUser).where(AdminUser.email == email.strip().lower()))
    is_match = check_password_hash(admin.password_hash if admin else _DUMMY_HASH, password[:1024])
    if admin is None or not is_match:
        login_throttle.record_failure("admin", email, address)
        return None
    login_throttle.record_success("admin", email, address)
    return admin


def log_in(admin: AdminUser) -> None:
    session.clear()  # no customer identity or stale state rides along
    session[SESSION_KEY] = admin.id
    session[SESSION_VERSION_KEY] = admin.session_version
    admin.last_login_at = utcnow()
    db.session.commit()


def log_out() -> None:
    """End this admin's sessions everywhere: a replayed copy of the cookie is refused."""
    admin = current_admin()
    if admin is not None:
        admin.session_version += 1
        db.session.commit()
    session.pop(SESSION_KEY, None)
    session.pop(SESSION_VERSION_KEY, None)


def current_admin() -> AdminUser | None:
    admin_id, version = session.get(SESSION_KEY), session.get(SESSION_VERSION_KEY)
    if not isinstance(admin_id, int) or not isinstance(version, int):
        return None
    admin = db.session.get(AdminUser, admin_id)
    if admin is None or admin.session_version != version:
        return None
    return admin
